#!/usr/bin/env bash
# Real-MTA lab for the engine's integration suite (test/mta/): dnsmasq (authoritative lab.test),
# Postfix (four listeners, one behind postgrey), Exim and OpenSMTPD from Debian packages, each on
# its own loopback address (127.0.0.0/8 is routed to lo on Linux: no `ip addr add` needed).
#
#   scripts/mta-lab.sh up       install what is missing, write configs, start, wait, summarise
#   scripts/mta-lab.sh down     stop exactly the processes `up` started (pid files in the state dir)
#   scripts/mta-lab.sh status   what runs, where
#   scripts/mta-lab.sh test     up → node --test test/mta/*.test.ts → down (down even on failure)
#
# State (configs, pid files, logs, cached .debs) lives in $MTA_LAB_DIR (default
# /tmp/mailprobe-mta-lab). Needs root (apt-get, port 25/53, mount namespaces).
#
# Postfix is installed with apt-get (debconf "No configuration": the system instance stays
# unconfigured and is never started) and runs from its own config_directory. Exim and OpenSMTPD
# conflict with Postfix as packages: their .debs (and missing libraries) are unpacked under the
# state dir and run inside private mount namespaces that give them their users (/etc/passwd,
# /etc/group), a resolv.conf pointing at the lab DNS and, for OpenSMTPD, its compiled-in
# /var/spool/smtpd, /var/lib/opensmtpd/empty and /run — nothing of the system's is changed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT_DIR="$(dirname "$HERE")"
TEMPLATES="$HERE/mta-lab"
LAB="${MTA_LAB_DIR:-/tmp/mailprobe-mta-lab}"

DNS_ADDR=127.0.3.53
DNS_PORT=53
PF_ADDR=127.0.3.10
PF_TLS_ADDR=127.0.3.11
PF_RATE_ADDR=127.0.3.12
PF_RATE_LIMIT=15
PF_GREY_ADDR=127.0.3.13
POSTGREY_ADDR=127.0.3.14
POSTGREY_PORT=10023
POSTGREY_DELAY=2
EXIM_ADDR=127.0.3.20
SMTPD_ADDR=127.0.3.30
SMTPD_TLS_ADDR=127.0.3.31
# One existing mailbox that Postfix and Exim refuse by a per-recipient rule, in words that no
# reply rule of the engine knows, so that a refusal of a mailbox that exists is in the lab.
BLOCKED_LOCAL_PART=grace
BLOCK_TEXT="You are not welcome here"
# Lab users inside the namespaces (uids unlikely to exist on the host).
LAB_UID_BASE=64870

log() { printf 'mta-lab: %s\n' "$*"; }
die() {
  printf 'mta-lab: error: %s\n' "$*" >&2
  exit 1
}

[[ $(id -u) -eq 0 ]] || die "needs root (apt-get, ports 25/53, mount namespaces)"

# ---------------------------------------------------------------------------------------------
# Install

pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

apt_updated=0
apt_update_once() {
  if [[ $apt_updated -eq 0 ]]; then
    log "apt-get update"
    apt-get update -qq
    apt_updated=1
  fi
}

install_system_packages() {
  local missing=() p
  for p in postfix postgrey dnsmasq-base openssl; do pkg_installed "$p" || missing+=("$p"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  log "installing ${missing[*]}"
  # Never start services from maintainer scripts; keep an existing policy-rc.d as it is.
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    made_policy=1
  fi
  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
  # No package lists yet (a fresh image): fetch them first.
  if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then apt_update_once; fi
  local apt_opts=(-y -qq --no-install-recommends -o Dpkg::Options::=--force-confold)
  if ! DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" "${missing[@]}" >"$LAB/log/apt.log" 2>&1; then
    apt_update_once
    DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" "${missing[@]}" >>"$LAB/log/apt.log" 2>&1 ||
      {
        [[ $made_policy -eq 1 ]] && rm -f "$policy"
        tail -20 "$LAB/log/apt.log" >&2
        die "apt-get install ${missing[*]} failed (log: $LAB/log/apt.log)"
      }
  fi
  [[ $made_policy -eq 1 ]] && rm -f "$policy"
  return 0
}

# Downloads a package's .deb into the cache (unless cached) and unpacks it into $LAB/root.
unpack_deb() {
  local pkg=$1 deb
  [[ -e "$LAB/root/.unpacked-$pkg" ]] && return 0
  deb=$(compgen -G "$LAB/debs/${pkg}_*.deb" | head -n 1 || true)
  if [[ -z $deb ]]; then
    (cd "$LAB/debs" && apt-get download -qq -o APT::Sandbox::User=root "$pkg") ||
      { apt_update_once && (cd "$LAB/debs" && apt-get download -qq -o APT::Sandbox::User=root "$pkg"); } ||
      die "apt-get download $pkg failed"
    deb=$(compgen -G "$LAB/debs/${pkg}_*.deb" | head -n 1)
  fi
  dpkg -x "$deb" "$LAB/root"
  touch "$LAB/root/.unpacked-$pkg"
}

lab_libpath() {
  local d out=""
  for d in "$LAB"/root/usr/lib/*-linux-gnu "$LAB"/root/lib/*-linux-gnu; do
    [[ -d $d ]] && out="${out:+$out:}$d"
  done
  printf '%s' "$out"
}

# The MTA packages that conflict with Postfix, plus their library dependencies that the system lacks.
unpack_side_by_side() {
  local pkg dep
  for pkg in exim4-daemon-light opensmtpd; do
    unpack_deb "$pkg"
    if [[ ! -e "$LAB/root/.deps-$pkg" ]]; then
      for dep in $(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
        --no-replaces --no-enhances "$pkg" 2>/dev/null | awk '/Depends: lib/ {print $2}'); do
        pkg_installed "$dep" || unpack_deb "$dep"
      done
      touch "$LAB/root/.deps-$pkg"
    fi
  done
  local bin missing
  for bin in "$LAB/root/usr/sbin/exim4" "$LAB/root/usr/sbin/smtpd"; do
    missing=$(LD_LIBRARY_PATH="$(lab_libpath)" ldd "$bin" | grep 'not found' || true)
    [[ -z $missing ]] || die "$bin: missing libraries: $missing"
  done
}

# ---------------------------------------------------------------------------------------------
# Configuration

render() { # template → destination, placeholders filled in
  sed -e "s|@LAB@|$LAB|g" -e "s|@DNS_ADDR@|$DNS_ADDR|g" -e "s|@DNS_PORT@|$DNS_PORT|g" \
    -e "s|@PF_ADDR@|$PF_ADDR|g" -e "s|@PF_TLS_ADDR@|$PF_TLS_ADDR|g" -e "s|@PF_RATE_ADDR@|$PF_RATE_ADDR|g" \
    -e "s|@PF_RATE_LIMIT@|$PF_RATE_LIMIT|g" -e "s|@PF_GREY_ADDR@|$PF_GREY_ADDR|g" \
    -e "s|@POSTGREY@|$POSTGREY_ADDR:$POSTGREY_PORT|g" -e "s|@EXIM_ADDR@|$EXIM_ADDR|g" \
    -e "s|@SMTPD_ADDR@|$SMTPD_ADDR|g" -e "s|@SMTPD_TLS_ADDR@|$SMTPD_TLS_ADDR|g" \
    -e "s|@BLOCKED_LOCAL_PART@|$BLOCKED_LOCAL_PART|g" -e "s|@BLOCK_TEXT@|$BLOCK_TEXT|g" "$1" >"$2"
}

mailboxes() { grep -v -e '^#' -e '^[[:space:]]*$' "$TEMPLATES/mailboxes.txt"; }

write_configs() {
  mkdir -p "$LAB"/{etc,tls,dnsmasq,postfix/etc,postfix/spool,postfix/data,postfix/mail,exim/spool,smtpd/spool,run,log/exim}

  # One self-signed certificate for every lab MX (the engine does not verify certificates).
  if [[ ! -s "$LAB/tls/cert.pem" ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 \
      -subj "/CN=mx.tls.lab.test" \
      -addext "subjectAltName=DNS:mx.pf.lab.test,DNS:mx.tls.lab.test,DNS:mx.rate.lab.test,DNS:mx.grey.lab.test,DNS:mx.exim.lab.test,DNS:mx.smtpd.lab.test,DNS:mx.smtpd-tls.lab.test" \
      -keyout "$LAB/tls/key.pem" -out "$LAB/tls/cert.pem" >/dev/null 2>&1 || die "openssl failed"
    chmod 600 "$LAB/tls/key.pem"
  fi

  # Users for the namespaced daemons: the host's own files plus ours.
  local i=0 u
  cp /etc/passwd "$LAB/etc/passwd"
  cp /etc/group "$LAB/etc/group"
  for u in Debian-exim opensmtpd opensmtpq vmail; do
    if ! grep -q "^$u:" /etc/passwd; then
      echo "$u:x:$((LAB_UID_BASE + i)):$((LAB_UID_BASE + i))::/nonexistent:/usr/sbin/nologin" >>"$LAB/etc/passwd"
    fi
    if ! grep -q "^$u:" /etc/group; then echo "$u:x:$((LAB_UID_BASE + i)):" >>"$LAB/etc/group"; fi
    i=$((i + 1))
  done
  printf 'nameserver %s\noptions timeout:1 attempts:1\n' "$DNS_ADDR" >"$LAB/etc/resolv.conf"

  render "$TEMPLATES/dnsmasq.conf" "$LAB/dnsmasq/dnsmasq.conf"

  render "$TEMPLATES/postfix-main.cf" "$LAB/postfix/etc/main.cf"
  render "$TEMPLATES/postfix-master.cf" "$LAB/postfix/etc/master.cf"
  local d m
  : >"$LAB/postfix/etc/vmailbox"
  for d in pf.lab.test tls.lab.test rate.lab.test grey.lab.test; do
    while read -r m; do echo "$m@$d $d/$m/" >>"$LAB/postfix/etc/vmailbox"; done < <(mailboxes)
  done
  # access(5): "REJECT text" would be sent as "554 5.7.1 <x>: Recipient address rejected: text",
  # whose 5.7.1 a reply rule already calls policy; an explicit "550 5.0.0 text" keeps the code
  # generic ("550 5.0.0 <x>: Recipient address rejected: text"), so the evidence rule decides.
  echo "$BLOCKED_LOCAL_PART@pf.lab.test 550 5.0.0 $BLOCK_TEXT" >"$LAB/postfix/etc/recipient_access"

  render "$TEMPLATES/exim.conf" "$LAB/exim/exim.conf"
  mailboxes | sed 's/$/:/' >"$LAB/exim/mailboxes"
  # Exim reads its key as Debian-exim (inside the namespace): its own copy, owned by that user.
  cp "$LAB/tls/key.pem" "$LAB/exim/key.pem"
  chown -R "$(grep "^Debian-exim:" "$LAB/etc/passwd" | cut -d: -f3,4)" "$LAB/exim/spool" "$LAB/log/exim" "$LAB/exim/key.pem"

  render "$TEMPLATES/smtpd.conf" "$LAB/smtpd/smtpd.conf"
  for d in smtpd.lab.test smtpd-tls.lab.test; do mailboxes | sed "s/\$/@$d vmail/"; done >"$LAB/smtpd/vusers"
  chmod 600 "$LAB/smtpd/smtpd.conf"

  cat >"$LAB/lab.json" <<EOF
{
  "dir": "$LAB",
  "dns": "$DNS_ADDR:$DNS_PORT",
  "egress": "127.0.0.1",
  "heloName": "probe.lab.test",
  "mailFrom": "verify@lab.test",
  "mailboxes": "$TEMPLATES/mailboxes.txt",
  "recipientBlock": { "localPart": "$BLOCKED_LOCAL_PART", "text": "$BLOCK_TEXT" },
  "postfix": { "domain": "pf.lab.test", "host": "mx.pf.lab.test", "address": "$PF_ADDR", "log": "$LAB/log/postfix.log" },
  "postfixTls": { "domain": "tls.lab.test", "host": "mx.tls.lab.test", "address": "$PF_TLS_ADDR", "log": "$LAB/log/postfix.log" },
  "postfixRate": { "domain": "rate.lab.test", "host": "mx.rate.lab.test", "address": "$PF_RATE_ADDR", "log": "$LAB/log/postfix.log", "recipientRateLimit": $PF_RATE_LIMIT },
  "postfixGrey": { "domain": "grey.lab.test", "host": "mx.grey.lab.test", "address": "$PF_GREY_ADDR", "log": "$LAB/log/postfix.log", "greylistDelaySeconds": $POSTGREY_DELAY },
  "exim": { "domain": "exim.lab.test", "host": "mx.exim.lab.test", "address": "$EXIM_ADDR", "log": "$LAB/log/exim/mainlog" },
  "opensmtpd": { "domain": "smtpd.lab.test", "host": "mx.smtpd.lab.test", "address": "$SMTPD_ADDR", "log": "$LAB/log/opensmtpd.log" },
  "opensmtpdTls": { "domain": "smtpd-tls.lab.test", "host": "mx.smtpd-tls.lab.test", "address": "$SMTPD_TLS_ADDR", "log": "$LAB/log/opensmtpd.log" }
}
EOF
}

# ---------------------------------------------------------------------------------------------
# Processes

# A zombie (killed, not yet reaped by PID 1) counts as gone.
running() { [[ -r /proc/$1/stat ]] && ! awk '{exit ($3 == "Z" ? 0 : 1)}' "/proc/$1/stat" 2>/dev/null; }

pid_alive() { # name → 0 when its recorded pid runs the expected program
  local f="$LAB/run/$1.pid" pid
  [[ -s $f ]] || return 1
  pid=$(head -n 1 "$f")
  [[ $pid =~ ^[0-9]+$ ]] && running "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"
}

# Namespace wrapper: bind the lab's passwd/group/resolv.conf (and extra tmpfs dirs) then exec.
write_ns_wrapper() {
  cat >"$LAB/run/ns-exec.sh" <<EOF
#!/bin/sh
# Runs a command in the mount namespace set up by \`unshare --mount\` (scripts/mta-lab.sh).
set -e
mount --bind "$LAB/etc/passwd" /etc/passwd
mount --bind "$LAB/etc/group" /etc/group
mount --bind "$LAB/etc/resolv.conf" /etc/resolv.conf
if [ "\$1" = "--opensmtpd" ]; then
  shift
  mount -t tmpfs -o mode=755 mta-lab /var/lib
  mkdir -p /var/lib/opensmtpd/empty
  mount --bind "$LAB/smtpd/spool" /var/spool
  mount -t tmpfs -o mode=755 mta-lab /run
fi
exec "\$@"
EOF
  chmod 755 "$LAB/run/ns-exec.sh"
}

wait_for_port() { # name addr port [banner-prefix]: bounded (10 s); fails early if name's pid died
  local deadline=$((SECONDS + 10)) pid=""
  [[ -s "$LAB/run/$1.pid" ]] && pid=$(head -n 1 "$LAB/run/$1.pid")
  while ((SECONDS < deadline)); do
    if [[ -n ${4:-} ]]; then
      if timeout 1 bash -c "exec 3<>/dev/tcp/$2/$3; head -c ${#4} <&3" 2>/dev/null | grep -q "^$4"; then return 0; fi
    elif timeout 1 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null; then
      return 0
    fi
    if [[ -n $pid ]] && ! running "$pid"; then die "$1 exited at start (logs: $LAB/log/)"; fi
    sleep 0.1
  done
  die "$1 does not answer on $2:$3 (logs: $LAB/log/)"
}

start_dnsmasq() {
  if pid_alive dnsmasq dnsmasq; then return 0; fi
  setsid /usr/sbin/dnsmasq --keep-in-foreground --conf-file="$LAB/dnsmasq/dnsmasq.conf" \
    </dev/null >>"$LAB/log/dnsmasq.out" 2>&1 &
  echo $! >"$LAB/run/dnsmasq.pid"
  wait_for_port dnsmasq "$DNS_ADDR" "$DNS_PORT"
}

start_postgrey() {
  if pid_alive postgrey postgrey; then return 0; fi
  # A fresh database each start: every triplet is greylisted once.
  rm -rf "$LAB/postgrey"
  mkdir -p "$LAB/postgrey"
  chown postgrey:postgrey "$LAB/postgrey"
  setsid /usr/sbin/postgrey --inet="$POSTGREY_ADDR:$POSTGREY_PORT" --delay="$POSTGREY_DELAY" \
    --dbdir="$LAB/postgrey" --auto-whitelist-clients=0 --hostname=mx.grey.lab.test \
    </dev/null >>"$LAB/log/postgrey.out" 2>&1 &
  echo $! >"$LAB/run/postgrey.pid"
  wait_for_port postgrey "$POSTGREY_ADDR" "$POSTGREY_PORT"
}

start_postfix() {
  local pf_pid="$LAB/postfix/spool/pid/master.pid"
  if pid_alive postfix master; then return 0; fi
  chown -R postfix:postfix "$LAB/postfix/data"
  postfix -c "$LAB/postfix/etc" set-permissions >>"$LAB/log/postfix.out" 2>&1 || true
  postfix -c "$LAB/postfix/etc" start >>"$LAB/log/postfix.out" 2>&1 ||
    die "postfix did not start (see $LAB/log/postfix.out)"
  local i
  for i in $(seq 1 50); do
    if [[ -s $pf_pid ]]; then break; fi
    sleep 0.1
  done
  tr -d ' ' <"$pf_pid" >"$LAB/run/postfix.pid"
  wait_for_port postfix "$PF_ADDR" 25 220
  wait_for_port postfix "$PF_TLS_ADDR" 25 220
  wait_for_port postfix "$PF_RATE_ADDR" 25 220
  wait_for_port postfix "$PF_GREY_ADDR" 25 220
}

start_exim() {
  if pid_alive exim exim4; then return 0; fi
  # Exim's daemon (-bdf: foreground) forks one process per connection.
  LD_LIBRARY_PATH="$(lab_libpath)" setsid unshare --mount --propagation private \
    "$LAB/run/ns-exec.sh" "$LAB/root/usr/sbin/exim4" -C "$LAB/exim/exim.conf" -bdf \
    </dev/null >>"$LAB/log/exim.out" 2>&1 &
  echo $! >"$LAB/run/exim.pid"
  wait_for_port exim "$EXIM_ADDR" 25 220
}

start_opensmtpd() {
  if pid_alive opensmtpd smtpd; then return 0; fi
  LD_LIBRARY_PATH="$(lab_libpath)" setsid unshare --mount --propagation private \
    "$LAB/run/ns-exec.sh" --opensmtpd "$LAB/root/usr/sbin/smtpd" -d -v -f "$LAB/smtpd/smtpd.conf" \
    </dev/null >>"$LAB/log/opensmtpd.log" 2>&1 &
  echo $! >"$LAB/run/opensmtpd.pid"
  wait_for_port opensmtpd "$SMTPD_ADDR" 25 220
  wait_for_port opensmtpd "$SMTPD_TLS_ADDR" 25 220
}

stop_pid() { # name program
  local f="$LAB/run/$1.pid" pid i
  if pid_alive "$1" "$2"; then
    pid=$(head -n 1 "$f")
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    log "stopped $1 (pid $pid)"
  fi
  rm -f "$f"
}

# ---------------------------------------------------------------------------------------------
# Commands

check_loopback() {
  local a
  for a in "$DNS_ADDR" "$PF_ADDR" "$PF_GREY_ADDR" "$EXIM_ADDR" "$SMTPD_ADDR"; do
    ip -o route get "$a" 2>/dev/null | grep -q ' dev lo ' || die "$a is not routed to lo"
  done
}

status() {
  local line name prog addr
  for line in "dnsmasq dnsmasq $DNS_ADDR:$DNS_PORT" "postgrey postgrey $POSTGREY_ADDR:$POSTGREY_PORT" \
    "postfix master $PF_ADDR:25,$PF_TLS_ADDR:25(tls),$PF_RATE_ADDR:25(rate),$PF_GREY_ADDR:25(grey)" \
    "exim exim4 $EXIM_ADDR:25" "opensmtpd smtpd $SMTPD_ADDR:25,$SMTPD_TLS_ADDR:25(starttls)"; do
    read -r name prog addr <<<"$line"
    if pid_alive "$name" "$prog"; then
      printf '  %-10s pid %-7s %s\n' "$name" "$(head -n 1 "$LAB/run/$name.pid")" "$addr"
    else
      printf '  %-10s down\n' "$name"
    fi
  done
}

up() {
  local started=$SECONDS
  mkdir -p "$LAB"/{debs,root,run,log}
  check_loopback
  install_system_packages
  unpack_side_by_side
  write_configs
  write_ns_wrapper
  start_dnsmasq
  start_postgrey
  start_postfix
  start_exim
  start_opensmtpd
  log "up in $((SECONDS - started)) s; state in $LAB"
  status
  log "engine: dnsServers [\"$DNS_ADDR:$DNS_PORT\"], smtpPort 25, HELO probe.lab.test, MAIL FROM verify@lab.test"
}

down() {
  stop_pid opensmtpd smtpd
  stop_pid exim exim4
  if pid_alive postfix master; then
    local i pid
    pid=$(head -n 1 "$LAB/run/postfix.pid")
    postfix -c "$LAB/postfix/etc" stop >>"$LAB/log/postfix.out" 2>&1 || true
    for i in $(seq 1 50); do running "$pid" || break; sleep 0.1; done
    running "$pid" || log "stopped postfix (pid $pid)"
  fi
  stop_pid postfix master
  stop_pid postgrey postgrey
  stop_pid dnsmasq dnsmasq
  log "down"
}

run_tests() {
  local rc=0 started=$SECONDS self
  self="$HERE/$(basename "${BASH_SOURCE[0]}")"
  # up and down run as processes of their own (a failing step exits them, not this one); down
  # runs however this ends (test failure, Ctrl-C, kill).
  # shellcheck disable=SC2064 # expand $self now
  trap "bash '$self' down || true" EXIT
  trap 'exit 130' INT TERM
  bash "$self" up || rc=$?
  if [[ $rc -eq 0 ]]; then
    rm -f "$LAB/log/report.txt"
    # One file at a time: the MTAs' logs are read per scenario.
    (cd "$ROOT_DIR" && MTA_LAB_DIR="$LAB" node --import tsx --test --test-concurrency=1 test/mta/*.test.ts) || rc=$?
    if [[ -s "$LAB/log/report.txt" ]]; then cat "$LAB/log/report.txt"; fi
  fi
  log "test: exit $rc after $((SECONDS - started)) s (MTA logs in $LAB/log)"
  return "$rc"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  test) run_tests ;;
  *)
    echo "usage: $0 up|down|status|test" >&2
    exit 2
    ;;
esac

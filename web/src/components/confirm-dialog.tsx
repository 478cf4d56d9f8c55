// A modal confirmation on the native <dialog> (focus kept inside, Escape cancels).
import type { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";

export function ConfirmDialog({
  title,
  confirmLabel,
  dismissLabel = "Cancel",
  busy,
  onConfirm,
  onCancel,
  children,
}: {
  title: string;
  confirmLabel: string;
  /** The way out, named so it cannot be read as the action (not "Cancel" beside "Cancel task"). */
  dismissLabel?: string;
  busy: boolean;
  onConfirm: () => void;
  onCancel: () => void;
  children: ComponentChildren;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      class="dialog"
      aria-labelledby="dialog-title"
      onCancel={(e) => {
        e.preventDefault();
        if (!busy) onCancel();
      }}
    >
      <h2 id="dialog-title">{title}</h2>
      {children}
      <div class="button-row">
        <button type="button" class="danger" disabled={busy} onClick={onConfirm}>
          {confirmLabel}
        </button>
        <button type="button" class="secondary" disabled={busy} onClick={onCancel}>
          {dismissLabel}
        </button>
      </div>
    </dialog>
  );
}

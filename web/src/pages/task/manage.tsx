// Cancel a running task or delete a finished one.
import { useState } from "preact/hooks";
import type { Task } from "@mailprobe/client";
import { client, request } from "../../api.ts";
import { ConfirmDialog } from "../../components/confirm-dialog.tsx";
import { ErrorMessage } from "../../components/feedback.tsx";
import { setFlash } from "../../flash.ts";
import { announce, useAction } from "../../hooks.ts";
import { plural } from "../../lib/format.ts";
import { taskName } from "../../lib/task-text.ts";
import { hrefOf, navigate } from "../../router.ts";

/**
 * Cancel (running: pending addresses are dropped and refunded, addresses being verified finish)
 * or delete (finished: jobs, results and the stored file go; the credit history stays).
 */
export function ManageSection({ task, onCancelled }: { task: Task; onCancelled: () => void }) {
  const running = task.finished_at === null;
  const [confirming, setConfirming] = useState(false);
  const pending = task.metrics.job_status.pending;
  const {
    busy,
    error,
    setError,
    run: act,
  } = useAction(async () => {
    if (running) {
      await request(client.POST("/api/v1/tasks/{id}/cancel", { params: { path: { id: task.id } } }));
      setConfirming(false);
      announce("The task was cancelled");
      onCancelled();
    } else {
      await request(client.DELETE("/api/v1/tasks/{id}", { params: { path: { id: task.id } } }));
      setFlash(`Deleted the results of ${taskName(task)}.`);
      navigate(hrefOf.tasks);
    }
  });

  return (
    <section class="card" aria-labelledby="manage-title">
      <h2 id="manage-title">{running ? "Stop this task" : "Delete this task"}</h2>
      {running ? (
        <p>
          Cancelling drops the addresses not verified yet and returns their credits at once; addresses being
          verified right now finish and keep their results. The webhook, if set, is called with status{" "}
          <code>cancelled</code>.
        </p>
      ) : (
        <p>
          Deleting removes this task's addresses, results and uploaded file for good. Your credit history
          keeps what was charged and refunded.
        </p>
      )}
      <div class="button-row">
        <button
          type="button"
          class="danger-outline"
          onClick={() => {
            setError(null);
            setConfirming(true);
          }}
        >
          {running ? "Cancel task" : "Delete task"}
        </button>
      </div>
      {confirming && (
        <ConfirmDialog
          title={running ? "Cancel this task?" : "Delete this task's data?"}
          confirmLabel={running ? "Stop and refund" : "Delete task"}
          dismissLabel={running ? "Keep it running" : "Keep it"}
          busy={busy}
          onConfirm={() => void act()}
          onCancel={() => setConfirming(false)}
        >
          <p>
            {running
              ? `${plural(pending, "address", "addresses")} not verified yet will be dropped and refunded. This cannot be undone.`
              : "Its addresses, results and file are deleted. This cannot be undone."}
          </p>
          {error !== null && (
            <ErrorMessage
              error={error}
              title={running ? "The task was not cancelled" : "The task was not deleted"}
            />
          )}
        </ConfirmDialog>
      )}
    </section>
  );
}

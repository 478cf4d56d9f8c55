// After a task is deleted, a retry with the Idempotency-Key that created it is refused (409
// CONFLICT naming the header) for the rest of the key's 24 hours, instead of creating and
// billing a new task. JSON tasks and uploads alike; a new key still creates.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { multipart } from "../../support/multipart.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";
import { assertError } from "../api/helpers.ts";

let ctx: TestContext;

before(async () => {
  ctx = await createTestContext();
});

after(async () => {
  await ctx?.close();
});

const json = (user: TestUser, key: string) =>
  ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks",
    headers: { ...ctx.bearer(user.apiKey), "idempotency-key": key },
    payload: { emails: ["ann@acme.test", "bob@acme.test"] },
  });

const upload = (user: TestUser, key: string) => {
  const { payload, contentType } = multipart([
    { name: "file", filename: "list.csv", data: "email\nann@acme.test\nbob@acme.test\n" },
  ]);
  return ctx.app.inject({
    method: "POST",
    url: "/api/v1/tasks/batch/upload",
    headers: { ...ctx.bearer(user.apiKey), "content-type": contentType, "idempotency-key": key },
    payload,
  });
};

async function cancelAndDelete(user: TestUser, taskId: string): Promise<void> {
  const headers = ctx.bearer(user.apiKey);
  assert.equal(
    (await ctx.app.inject({ method: "POST", url: `/api/v1/tasks/${taskId}/cancel`, headers })).statusCode,
    200,
  );
  const deleted = await ctx.app.inject({ method: "DELETE", url: `/api/v1/tasks/${taskId}`, headers });
  assert.ok([200, 204].includes(deleted.statusCode), deleted.body);
}

const balanceOf = async (user: TestUser) => (await ctx.services.credits.balance(user.userId)).balance;
const tasksOf = async (user: TestUser) =>
  Number(
    (await ctx.db.query<{ n: number }>("select count(*) as n from tasks where user_id = $1", [user.userId]))
      .rows[0]!.n,
  );

for (const [name, send, created] of [
  ["a JSON task", json, 201],
  ["an upload", upload, 202],
] as const) {
  test(`${name}: the deleted task's key is a 409, nothing created or billed; a new key creates`, async () => {
    const user = await ctx.createUser(10);
    const first = await send(user, "list-42");
    assert.equal(first.statusCode, created, first.body);
    const taskId = first.json<{ id?: string; task_id?: string }>().task_id ?? first.json<{ id: string }>().id;
    await cancelAndDelete(user, taskId);
    assert.equal(await balanceOf(user), 10, "the cancel refunded the reservation");

    for (let i = 0; i < 2; i++) {
      const retried = await send(user, "list-42");
      const error = assertError(retried, 409, "CONFLICT", [
        { field: "Idempotency-Key", reason: "its task was deleted" },
      ]);
      assert.match(error.message, /has been deleted/);
    }
    assert.equal(await tasksOf(user), 0);
    assert.equal(await balanceOf(user), 10);

    assert.equal((await send(user, "list-43")).statusCode, created);
    assert.equal(await balanceOf(user), 8);
  });
}

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  chunkGroups,
  DOMAIN_GROUP_MAX,
  groupByDomain,
  groupDomainOf,
} from "../../../src/verify/group-by-domain.ts";
import { checkSyntax } from "../../../src/verify/syntax.ts";

const domainOf = (email: string): string => groupDomainOf(checkSyntax(email));

describe("groupByDomain", () => {
  test("domains in first-occurrence order, addresses in input order; failed syntax under ''", () => {
    const groups = groupByDomain(["a@y.test", "b@x.test", "not an address", "c@y.test"], domainOf);
    assert.deepEqual(
      [...groups],
      [
        ["y.test", ["a@y.test", "c@y.test"]],
        ["x.test", ["b@x.test"]],
        ["", ["not an address"]],
      ],
    );
  });

  test("firstDomains lead, even while empty", () => {
    const groups = groupByDomain(["a@y.test"], domainOf, ["x.test"]);
    assert.deepEqual(
      [...groups],
      [
        ["x.test", []],
        ["y.test", ["a@y.test"]],
      ],
    );
  });
});

describe("chunkGroups", () => {
  test("cuts each domain into runs of at most the group size, domains in order", () => {
    const many = Array.from({ length: DOMAIN_GROUP_MAX + 1 }, (_, i) => `u${i.toString()}@x.test`);
    const chunks = chunkGroups(groupByDomain([...many, "a@y.test"], domainOf));
    assert.deepEqual(
      chunks.map((c) => [c.domain, c.items.length]),
      [
        ["x.test", DOMAIN_GROUP_MAX],
        ["x.test", 1],
        ["y.test", 1],
      ],
    );
    assert.equal(chunks[1]?.items[0], `u${DOMAIN_GROUP_MAX.toString()}@x.test`);
  });

  test("a smaller limit", () => {
    const chunks = chunkGroups(groupByDomain(["a@x.test", "b@x.test", "c@x.test"], domainOf), 2);
    assert.deepEqual(chunks, [
      { domain: "x.test", items: ["a@x.test", "b@x.test"] },
      { domain: "x.test", items: ["c@x.test"] },
    ]);
  });
});

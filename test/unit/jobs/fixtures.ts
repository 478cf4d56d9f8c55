// A job and an engine answer as the pure job modules (outcomes, first touch, canary) see them.
import { CLAIM_LANE, type JobRecord } from "../../../src/db/queries/jobs.ts";
import { allSkippedAfterSyntax, type VerificationResult } from "../../../src/verify/index.ts";

export const NOW = new Date("2026-01-01T00:00:00Z");

/** A claimed, never-tried first-chunk job of bob@example.test; `over` changes any field. */
export const jobRecord = (over: Partial<JobRecord> = {}): JobRecord => ({
  id: "00000000-0000-0000-0000-000000000001",
  taskId: "00000000-0000-0000-0000-000000000002",
  userId: null,
  position: 0,
  emailAddress: "bob@example.test",
  domain: "example.test",
  status: "processing",
  attempts: 1,
  deferredRetries: 0,
  unreachableRetries: 0,
  runAfter: new Date("2025-12-31T23:00:00Z"),
  claimLane: CLAIM_LANE.firstChunk,
  lastError: null,
  emailId: null,
  retryResult: null,
  createdAt: NOW,
  updatedAt: NOW,
  ...over,
});

/** A valid answer for bob@example.test; `over` changes any field. */
export const verificationResult = (over: Partial<VerificationResult> = {}): VerificationResult => ({
  email: "bob@example.test",
  status: "valid",
  isRoleBased: false,
  isDisposable: false,
  hasMxRecords: true,
  hasReverseDns: true,
  domainName: "example.test",
  hostName: "mx.example.test",
  serverType: "postfix",
  isCatchall: false,
  validatedAt: NOW,
  unknownReason: null,
  needsPhysicalVerify: false,
  didYouMean: null,
  isFreeProvider: false,
  checks: allSkippedAfterSyntax("scripted"),
  evidence: "",
  ...over,
});

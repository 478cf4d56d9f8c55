-- What decided each verification, in one line: the SMTP reply and the classifier rule, or the
-- evidence from the same server that decided an unrecognised rejection. For support and audits;
-- not one of the API's result fields. Null for results stored before it existed.
alter table email_verifications add column evidence text;

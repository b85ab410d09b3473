-- Same as 0020_provisioned_auth.sqlite.sql.
-- What the identity provider made for a validator without custom
-- authentication (its clients' ids, audience and the ledger API client's
-- service-account user), as JSON; '' while nothing is. No secret: the client
-- secret stays in the identity provider and the validator's Secret.
ALTER TABLE validators ADD COLUMN provisioned_auth TEXT NOT NULL DEFAULT '';

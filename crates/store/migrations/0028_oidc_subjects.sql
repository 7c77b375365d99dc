-- Users who sign in through an OpenID Connect provider: the issuer and subject that identify
-- them there (`issuer` and `sub` joined by a space), unique, so a second sign-in finds the
-- same user and two first sign-ins at once make one. NULL: a user made here.
ALTER TABLE users ADD COLUMN oidc_subject TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS users_by_oidc_subject ON users (oidc_subject);

"""SCIM 2.0 provisioning over django-scim2 (issue 25, point 4): the transport only. `auth` (the
bearer token: which provider, and so which organization, a call acts for), `filters` (`filter=`
queries), `adapters` (SCIM resources <-> our people and groups; every change through
sso/provisioning.py), `views` and `urls` (/scim/v2/…). README "SCIM provisioning"."""

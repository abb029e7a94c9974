"""`filter=` on /scim/v2/Users and /Groups: what identity providers send to look a person or a
group up before creating it (`userName eq "…"`, `displayName eq "…"`), parsed by
scim2-filter-parser into SQL; django-scim2 then keeps the rows of the caller's organization
(auth.filter_kwargs_getter). A person's userName is their email address (the `username` column,
compared without case), so `emails.value` reads the same column; attributes not listed here
match nothing. Also the Schemas endpoint's list: the two resources served."""

from django_scim.filters import GroupFilterQuery, UserFilterQuery
from django_scim.schemas import ALL


class UserFilter(UserFilterQuery):
    attr_map = {
        ("userName", None, None): "username",
        ("emails", "value", None): "username",
        ("emails", None, None): "username",
    }

    @classmethod
    def get_raw_args(cls, q, request=None):
        # Every attribute above is an address, stored lower-cased: compare the value so too.
        sql, params = super().get_raw_args(q, request)
        return sql, [value.lower() if isinstance(value, str) else value for value in params]


class GroupFilter(GroupFilterQuery):
    attr_map = {("displayName", None, None): "name"}


SERVED = ("urn:ietf:params:scim:schemas:core:2.0:User", "urn:ietf:params:scim:schemas:core:2.0:Group")


def schemas():
    # django-scim2's files lack the resource's own `schemas` (RFC 7643 §7), which clients check.
    return [{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"], **schema} for schema in ALL
            if schema["id"] in SERVED]

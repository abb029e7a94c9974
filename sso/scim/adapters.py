"""SCIM resources <-> our people and groups, for django-scim2's views. Reading only: each change
is handed to sso/provisioning.py, which holds the rules; its refusals become SCIM errors here.

Identity providers do not all speak alike, so the PATCH reader is lenient where they differ and
strict about values: Entra ID sends capitalised ops ("Replace") and booleans as strings ("False"),
Okta sends `{"op": "replace", "value": {"active": false}}` without a path; both are read. Attributes
we do not keep (title, phoneNumbers, the enterprise extension …) are ignored, as providers send them
all; a wrong value of one we keep is refused and nothing changes.
"""

import contextlib
import re

from django.contrib.auth.models import Group
from django_scim import constants, exceptions
from django_scim.adapters import SCIMGroup, SCIMUser
from django_scim.models import SCIMServiceProviderConfig

from kernel import origin
from sso import provisioning

USER_URN = constants.SchemaURI.USER + ":"
GROUP_URN = constants.SchemaURI.GROUP + ":"
EMAIL_PATH = re.compile(r"^emails(\[[^\]]*\])?(\.value)?$")
MEMBER_PATH = re.compile(r'^members\[\s*value\s+eq\s+"([^"]*)"\s*\]$', re.IGNORECASE)


def base_location(request=None, *args, **kwargs) -> str:
    return origin.base_url()


class ServiceProviderConfig(SCIMServiceProviderConfig):
    def to_dict(self):
        config = super().to_dict()
        config["filter"] = {"supported": True, "maxResults": 50}  # eq, sw, co … on userName and displayName
        config["changePassword"] = {"supported": False}  # people sign in with their provider
        config["bulk"] = {"supported": False, "maxOperations": 0, "maxPayloadSize": 0}
        return config


@contextlib.contextmanager
def refusals():
    """provisioning's refusals as SCIM errors (django-scim2's views answer them)."""
    try:
        yield
    except provisioning.Refused as error:
        if error.kind == "uniqueness":
            raise exceptions.IntegrityError(error.message, scim_type="uniqueness") from error
        raise exceptions.BadRequestError(error.message, scim_type="mutability" if error.kind == "mutability"
                                         else "invalidValue") from error


def _bad(detail: str, scim_type: str = "invalidValue") -> exceptions.SCIMException:
    return exceptions.BadRequestError(detail, scim_type=scim_type)


def _text(value, name: str) -> str:
    if not isinstance(value, str):
        raise _bad(f"{name} is a string, not {value!r}")
    return value


def _flag(value, name: str) -> bool:
    """A boolean, or the words Entra ID sends for one ("True", "False")."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _bad(f"{name} is true or false, not {value!r}")


def _emails(value) -> list[str]:
    """The addresses of an `emails` value: a list of {"value": …}, one such object, or a string."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise _bad("emails is a list of objects with a value")
    return [_text(item.get("value"), "emails.value") for item in value if item.get("value") is not None]


def _ops(operations) -> list[tuple[str, str, object]]:
    """(op in lower case, attribute path without the core schema's prefix, value) of each operation;
    one without a path gives one such triple per key of its value."""
    if not isinstance(operations, list) or not operations:
        raise _bad("Operations is a list of operations", "invalidSyntax")
    read = []
    for operation in operations:
        if not isinstance(operation, dict) or not isinstance(operation.get("op"), str):
            raise _bad("each operation is an object with an op", "invalidSyntax")
        op = operation["op"].strip().lower()
        if op not in constants.VALID_PATCH_OPS:
            raise _bad(f"op is add, remove or replace, not {operation['op']!r}", "invalidSyntax")
        path = operation.get("path")
        if path is not None:
            path = _text(path, "path").strip()
            for urn in (USER_URN, GROUP_URN):
                if path.lower().startswith(urn.lower()):
                    path = path[len(urn):]
        path = path or None  # "" names nothing, as a missing path
        if path is None and not (op == "remove" or isinstance(operation.get("value"), dict)):
            raise _bad("an add or replace without a path has an object as its value", "invalidSyntax")
        if op == "remove" and not path:
            raise _bad("a remove names its path", "noTarget")
        value = operation.get("value")
        read.extend([(op, path, value)] if path else [(op, _text(key, "path"), given) for key, given in value.items()])
    return read


class OfProvider:
    """Our ids are the rows' own; the provider is the one whose token the call carried (auth.py)."""

    id_field = "pk"

    @classmethod
    def resource_type_dict(cls, request=None):
        # The endpoint is relative to the base URL (RFC 7643 §6), not django-scim2's absolute path.
        described = super().resource_type_dict(request)
        described["endpoint"] = f"/{cls.resource_type}s"
        return described

    @property
    def provider(self):
        return self.request.scim_provider


class ScimUser(OfProvider, SCIMUser):
    @property
    def emails(self):
        return [{"value": self.obj.email, "type": "work", "primary": True}] if self.obj.email else []

    @property
    def groups(self):
        adapter = ScimGroup
        return [{"value": str(group.pk), "display": group.name, "$ref": adapter(group, self.request).location}
                for group in provisioning.groups(self.provider).filter(user=self.obj).order_by("pk")]

    def to_dict(self):
        # django-scim2 reads the externalId from the model; ours lives beside it (ProvisionedPerson).
        self.obj.scim_external_id = provisioning.external_id(self.obj)
        resource = super().to_dict()
        resource["userName"] = self.obj.email
        if resource["externalId"] is None:
            del resource["externalId"]
        return resource

    def validate_dict(self, d):
        """Read a whole User (POST, PUT) into `self.incoming`, refusing what is not one."""
        if not isinstance(d.get("userName"), str) or not d["userName"].strip():
            raise _bad("userName is required: the person's email address", "invalidValue")
        name = d.get("name") or {}
        if not isinstance(name, dict):
            raise _bad("name is an object with givenName and familyName")
        self.incoming = {
            "user_name": d["userName"].strip(),
            "emails": _emails(d.get("emails") or []),
            "first_name": _text(name.get("givenName") or "", "name.givenName"),
            "last_name": _text(name.get("familyName") or "", "name.familyName"),
            "active": None if d.get("active") is None else _flag(d["active"], "active"),
        }
        if d.get("externalId") is not None:
            self.incoming["external_id"] = _text(d["externalId"], "externalId")

    def from_dict(self, d):
        pass  # validate_dict read it; save() hands it over

    def save(self):
        incoming = dict(self.incoming)
        with refusals():
            if self.obj.pk is None:
                incoming["active"] = True if incoming["active"] is None else incoming["active"]
                self.obj = provisioning.add(self.provider, **incoming)
            else:
                self.obj = provisioning.change(self.provider, self.obj, **incoming)

    def delete(self):
        with refusals():
            provisioning.delete(self.provider, self.obj)

    def handle_operations(self, operations):
        changes = {}
        for op, attribute, value in _ops(operations):
            self._patch(changes, op, attribute, value)
        if changes:
            with refusals():
                self.obj = provisioning.change(self.provider, self.obj, **changes)

    @staticmethod
    def _patch(changes: dict, op: str, attribute: str, value) -> None:
        key = attribute.lower()
        if op == "remove":
            if key in ("name.givenname", "name.familyname", "externalid"):
                changes[{"name.givenname": "first_name", "name.familyname": "last_name"}.get(key, "external_id")] = ""
            elif key in ("active", "username") or EMAIL_PATH.match(key):
                raise _bad(f"{attribute} cannot be removed", "mutability")
            return
        if key == "active":
            changes["active"] = _flag(value, attribute)
        elif key == "username":
            changes["user_name"] = _text(value, attribute)
        elif key == "externalid":
            changes["external_id"] = _text(value, attribute)
        elif key == "name.givenname":
            changes["first_name"] = _text(value, attribute)
        elif key == "name.familyname":
            changes["last_name"] = _text(value, attribute)
        elif key == "name":
            if not isinstance(value, dict):
                raise _bad("name is an object with givenName and familyName")
            if "givenName" in value:
                changes["first_name"] = _text(value["givenName"] or "", "name.givenName")
            if "familyName" in value:
                changes["last_name"] = _text(value["familyName"] or "", "name.familyName")
        elif EMAIL_PATH.match(key):
            changes["emails"] = _emails(value)
        # anything else (displayName, title, phoneNumbers, the enterprise extension …) is not kept here


class ScimGroup(OfProvider, SCIMGroup):
    @property
    def members(self):
        return [{"value": str(user.pk), "display": user.email, "$ref": ScimUser(user, self.request).location}
                for user in provisioning.people(self.provider).filter(groups=self.obj).order_by("pk")]

    def to_dict(self):
        self.obj.scim_external_id = None  # not kept for groups
        resource = super().to_dict()
        del resource["externalId"]
        return resource

    @staticmethod
    def _member_ids(value) -> list[str]:
        if isinstance(value, dict):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, dict) and "value" in item for item in value):
            raise _bad("members is a list of objects with a value (a person's id)")
        return [str(item["value"]) for item in value]

    def validate_dict(self, d):
        if not isinstance(d.get("displayName"), str) or not d["displayName"].strip():
            raise _bad("displayName is required: the group's name")
        self.incoming = {"name": d["displayName"].strip(),
                         "member_ids": None if d.get("members") is None else self._member_ids(d["members"])}

    def from_dict(self, d):
        pass

    def save(self):
        name, member_ids = self.incoming["name"], self.incoming["member_ids"]
        with refusals():
            if self.obj.pk is None:
                self.obj = provisioning.add_group(self.provider, name=name, member_ids=member_ids or [])
            else:
                provisioning.rename_group(self.provider, self.obj, name)
                if member_ids is not None:
                    provisioning.change_members(self.provider, self.obj, replace=member_ids)

    def delete(self):
        with refusals():
            provisioning.delete_group(self.provider, self.obj)

    def handle_operations(self, operations):
        with refusals():
            for op, attribute, value in _ops(operations):
                self._patch(op, attribute, value)
        self.obj = Group.objects.get(pk=self.obj.pk)

    def _patch(self, op: str, attribute: str, value) -> None:
        key, provider = attribute.lower(), self.provider
        if match := MEMBER_PATH.match(attribute):
            if op != "remove":
                raise _bad("a filtered members path is only for remove", "invalidPath")
            provisioning.change_members(provider, self.obj, remove=[match.group(1)])
        elif key == "members":
            if op == "remove" and value is None:
                provisioning.change_members(provider, self.obj, replace=[])
            else:
                ids = self._member_ids(value)
                provisioning.change_members(provider, self.obj, **{"add": {"add": ids}, "remove": {"remove": ids},
                                                                   "replace": {"replace": ids}}[op])
        elif key == "displayname":
            if op == "remove":
                raise _bad("displayName cannot be removed", "mutability")
            provisioning.rename_group(provider, self.obj, _text(value, attribute))
        # id, externalId, schemas: nothing kept here

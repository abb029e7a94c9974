"""Another language is a catalogue away (issue 16, point 2): the pages' strings go through Django's
translation machinery and numbers through its formats, so a compiled catalogue under LOCALE_PATHS
and an entry in LANGUAGES change the inbox for a browser that asks for that language. The
catalogue here is written by the test (a real GNU .mo file), not shipped."""

import struct

from django.test import Client

from tests.test_inbox_views import PASSWORD

GERMAN = {
    "Inbox": "Posteingang", "Mine": "Meine", "My groups": "Meine Gruppen", "All open": "Alle offenen",
    "Done by me": "Von mir erledigt", "Filters and sort": "Filter und Sortierung",
    "Nothing waiting for you. New work appears here when a run reaches a step for you or your group.":
        "Nichts zu tun. Neue Arbeit erscheint hier, sobald ein Ablauf einen Schritt für Sie erreicht.",
    "<strong>%(n)s</strong> open": "<strong>%(n)s</strong> offen",
}


def write_mo(path, messages: dict) -> None:
    """A GNU gettext catalogue: header, the two string tables, then the strings."""
    entries = {"": "Content-Type: text/plain; charset=UTF-8\n", **messages}
    keys = sorted(entries)
    ids = [key.encode() for key in keys]
    strs = [entries[key].encode() for key in keys]
    start = 7 * 4 + 16 * len(keys)
    offsets, blob = [], b""
    for data in ids + strs:
        offsets.append((len(data), start + len(blob)))
        blob += data + b"\0"
    header = struct.pack("<7I", 0x950412DE, 0, len(keys), 28, 28 + 8 * len(keys), 0, 0)
    tables = b"".join(struct.pack("<2I", *pair) for pair in offsets)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + tables + blob)


def test_a_german_catalogue_turns_the_inbox_german_for_a_browser_asking_for_it(settings, tmp_path, make_person):
    write_mo(tmp_path / "de" / "LC_MESSAGES" / "django.mo", GERMAN)
    settings.LOCALE_PATHS = [tmp_path]
    settings.LANGUAGES = [("en", "English"), ("de", "Deutsch")]
    make_person("fin@example.com", password=PASSWORD)
    client = Client()
    assert client.login(username="fin@example.com", password=PASSWORD)

    html = client.get("/", headers={"accept-language": "de-DE,de;q=0.9"}).content.decode()
    assert '<html lang="de">' in html and "<h1>Posteingang</h1>" in html
    assert ">Meine Gruppen <span" in html and "Filter und Sortierung" in html
    assert "<strong>0</strong> offen" in html and "Nichts zu tun." in html
    english = client.get("/", headers={"accept-language": "en"}).content.decode()
    assert "<h1>Inbox</h1>" in english and "<strong>0</strong> open" in english

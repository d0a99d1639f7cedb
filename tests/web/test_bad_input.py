"""A sweep of malformed requests over every endpoint of the app.

The rule (docs/architecture.md, the JSON API): anything a client can send is answered with a
4xx ``{"error": {"code", "message"}}`` whose message is a sentence that says what
to fix, never a 500 and never a traceback; and a refused request changes nothing.

The routes come from the app itself, so a new endpoint is swept as soon as it
exists: every path id, every query parameter and, for a typed body, every field
of the body (wrong types, oversized text, lone surrogates). What the sweep cannot
work out for itself must be written down here, or ``test_every_route_is_swept_or_exempt``
fails: a route with no input (``EXEMPT``, with the reason), a valid value for each
path parameter (``PATH_VALUES``), a valid body for each route that takes one
(``VALID_BODIES``), the required text fields (``REQUIRED_TEXT``) and cases for a
free-form JSON body (``FREE_FORM_CASES``). ``PATH_VALUES`` and ``VALID_BODIES`` are in
``tests/kit/world.py``, with the world of real rows they refer to.

The tests at the end pin refusals that once slipped past validation into the
database or the model client (imports with out-of-range numbers, times or
references; settings that no request can carry).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, get_args, get_origin

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel
from tests.kit.web import Endpoint, Key, endpoints, plain
from tests.kit.world import PATH_VALUES, QUERY_VALUES, VALID_BODIES, World, make_world, state

from talekeeper_testkit.double import ModelDouble

JSON_HEADERS = {"content-type": "application/json"}
STREAM = {"Accept": "text/event-stream"}
HUGE = "x" * 100_001
TOO_BIG_ID = str(10**20)  # more than any 64-bit id column holds
UNKNOWN_ID = "999999"
# Words a refusal of oversized text uses: it states the limit, or the allowed values.
LIMIT_WORDS = ("the limit", "at most", "one of", "the scenarios are", "cannot change")

EXEMPT: dict[Key, str] = {
    ("GET", "/"): "the HTML adventures page, not the JSON API; it takes no input",
    ("GET", "/settings"): "the HTML settings page; it takes no input",
    ("GET", "/debug"): "the HTML debug page; it takes no input",
    ("GET", "/api/health"): "takes no input: no path id, query parameter or body",
    ("GET", "/api/ready"): "takes no input: no path id, query parameter or body",
    ("GET", "/api/settings"): "takes no input: no path id, query parameter or body",
    ("GET", "/api/settings/models"): "takes no input: the saved endpoint's model list",
    ("GET", "/api/settings/detect"): "takes no input: where it looks is the server's setting "
    "(tests/web/test_detect_api.py sends it query parameters that change nothing)",
    ("GET", "/api/derived"): "takes no input: every adventure's background work",
    ("GET", "/api/scenarios"): "takes no input: no path id, query parameter or body",
    ("GET", "/api/adventures"): "takes no input: no path id, query parameter or body",
    ("GET", "/account"): "the HTML account page; it takes no input",
    ("GET", "/setup"): "the HTML setup page; its secret is in the fragment, never sent",
    ("GET", "/api/auth/me"): "takes no input: who the request is signed in as",
    ("POST", "/api/auth/logout"): "takes no input: it ends the session the cookie names",
    ("GET", "/api/tokens"): "takes no input: the signed-in account's tokens",
    ("GET", "/admin"): "the HTML administrator's page; it takes no input",
    ("GET", "/api/admin/users"): "takes no input: every account with its usage figures",
    ("GET", "/api/library"): "takes no input: the user's library sources",
    ("GET", "/library"): "the HTML library page; it takes no input",
    ("GET", "/join"): "the HTML join page; the invite's code is in the fragment, never sent",
}


BAD_QUERY_VALUES: dict[Any, list[str]] = {
    int: ["abc", "1.5", "-1", TOO_BIG_ID],
    bool: ["maybe", "2"],
}


REQUIRED_TEXT: dict[Key, tuple[str, ...]] = {
    ("POST", "/api/adventures"): ("title",),
    ("PATCH", "/api/adventures/{adventure_id}"): ("title",),
    ("POST", "/api/adventures/{adventure_id}/cards"): ("name",),
    ("PATCH", "/api/cards/{card_id}"): ("name",),
    ("POST", "/api/adventures/{adventure_id}/actions"): ("text",),
    ("PATCH", "/api/actions/{action_id}"): ("text",),
    ("POST", "/api/adventures/{adventure_id}/memories"): ("text",),
    ("PATCH", "/api/memories/{memory_id}"): ("text",),
}


@dataclass
class Case:
    """One malformed body for a free-form route: what to send and words the refusal holds."""

    body: Callable[[World], Any]
    words: tuple[str, ...] = ()
    status: int = 400


def _export_with(change: Callable[[dict[str, Any]], None]) -> Callable[[World], Any]:
    def body(world: World) -> Any:
        data = copy.deepcopy(world.export)
        change(data)
        return data

    return body


FREE_FORM_CASES: dict[Key, list[Case]] = {
    ("POST", "/api/adventures/import"): [
        Case(lambda w: {"format": "x"}, ("not a Talekeeper adventure export",)),
        Case(lambda w: {"bogus_field": 1}, ("not a Talekeeper adventure export",)),
        Case(_export_with(lambda e: e.update(version=6)), ("version 1, 2, 3, 4 or 5",)),
        Case(_export_with(lambda e: e.update(version=True)), ("version 1, 2, 3, 4 or 5",)),
        Case(_export_with(lambda e: e.update(adventure=[])), ("file.adventure",)),
        Case(_export_with(lambda e: e["adventure"].update(title=5)), ("file.adventure.title",)),
        Case(_export_with(lambda e: e["adventure"].update(title="")), ("file.adventure.title",)),
        Case(_export_with(lambda e: e["adventure"].update(title=HUGE)), ("at most 200",)),
        Case(_export_with(lambda e: e["adventure"].update(memory_bank="yes")), ("true or false",)),
        Case(_export_with(lambda e: e["adventure"].update(created_at="soon")), ("ISO 8601",)),
        Case(_export_with(lambda e: e["adventure"].update(current_branch=9)), ("names no branch",)),
        Case(_export_with(lambda e: e.update(branches="x")), ("file.branches must be a list",)),
        Case(_export_with(lambda e: e["actions"][0].update(text=HUGE)), ("at most 20,000",)),
        Case(_export_with(lambda e: e["actions"][0].update(type="dance")), ("types are",)),
        Case(_export_with(lambda e: e["actions"][0].update(key="1")), ("whole number",)),
        Case(_export_with(lambda e: e["actions"].append(e["actions"][0])), ("used twice",)),
        Case(_export_with(lambda e: e["cards"].append({"name": ""})), ("'name'",)),
        Case(_export_with(lambda e: e["insights"][0].update(data=[])), ("malformed",)),
        Case(_export_with(lambda e: e["adventure"].update(title="\ud800")), ("Unicode",)),
        Case(
            _export_with(lambda e: e["world_events"][0].update(action=999)),
            ("file.world_events[0].action names no action",),
        ),
        Case(
            _export_with(lambda e: e["world_events"][0].update(kind="teleported")),
            ("file.world_events[0].kind", "moved"),
        ),
        Case(
            _export_with(lambda e: e["world_entities"].append(e["world_entities"][0])),
            ("used twice",),
        ),
        Case(
            _export_with(lambda e: e["card_proposals"][0]["evidence"][0].update(action=999)),
            ("file.card_proposals[0].evidence[0].action names no action",),
        ),
        Case(
            _export_with(lambda e: e["card_proposals"][0].update(card=999)),
            ("file.card_proposals[0].card names no story card",),
        ),
        Case(
            _export_with(lambda e: e["card_proposals"][0].update(state="maybe")),
            ("file.card_proposals[0].state", "dismissed"),
        ),
        Case(
            _export_with(lambda e: e["card_proposals"][0].update(keys=[""])),
            ("file.card_proposals[0].keys",),
        ),
        Case(
            _export_with(lambda e: e["world_entities"][0].update(name="\u200b")),
            ("file.world_entities[0]", "letter or digit"),
        ),
    ],
    ("PATCH", "/api/settings"): [
        Case(lambda w: {"bogus_field": 1}, ("bogus_field", "not a per-user setting")),
        Case(lambda w: {"reply_tokens": "lots"}, ("TALEKEEPER_REPLY_TOKENS",)),
        Case(lambda w: {"reply_tokens": 0}, ("TALEKEEPER_REPLY_TOKENS", "from 1")),
        Case(lambda w: {"temperature": "hot"}, ("TALEKEEPER_TEMPERATURE",)),
        Case(lambda w: {"model": 5}, ("TALEKEEPER_MODEL", "text")),
        Case(lambda w: {"api_mode": "telepathy"}, ("TALEKEEPER_API_MODE",)),
        Case(lambda w: {"endpoint_url": "nope"}, ("http://",)),
        Case(lambda w: {"model": HUGE}, ("'model'", "2,000")),
        Case(lambda w: {"model": "\ud800"}, ("'model'", "Unicode")),
        Case(lambda w: {"api_key": "\ud800"}, ("'api_key'", "Unicode")),
        Case(lambda w: {"world_model": "embedded"}, ("TALEKEEPER_WORLD_MODEL", "too small")),
        Case(lambda w: {"world_model": HUGE}, ("TALEKEEPER_WORLD_MODEL",)),
        Case(lambda w: {"world_model": 7}, ("TALEKEEPER_WORLD_MODEL",)),
    ],
    ("POST", "/api/settings/test-connection"): [
        Case(lambda w: {"bogus_field": 1}, ("not a per-user setting",)),
        Case(lambda w: {"temperature": "hot"}, ("TALEKEEPER_TEMPERATURE",)),
        Case(lambda w: {"endpoint_url": 5}, ("TALEKEEPER_ENDPOINT_URL",)),
        Case(lambda w: {"model": HUGE}, ("'model'", "2,000")),
        Case(lambda w: {"api_key": "\ud800"}, ("'api_key'", "Unicode")),
    ],
    ("POST", "/api/settings/models"): [
        Case(lambda w: {"bogus_field": 1}, ("not a per-user setting",)),
        Case(lambda w: {"endpoint_url": "nope"}, ("http://",)),
        Case(lambda w: {"endpoint_url": 5}, ("TALEKEEPER_ENDPOINT_URL",)),
        Case(lambda w: {"timeout": 0}, ("TALEKEEPER_TIMEOUT", "from 0.1")),
        Case(lambda w: {"model": HUGE}, ("'model'", "2,000")),
        Case(lambda w: {"api_key": "\ud800"}, ("'api_key'", "Unicode")),
    ],
}


# -- the app's routes ---------------------------------------------------------------------


# -- sending and judging ------------------------------------------------------------------


def assert_refused(
    response: Any, label: str, *words: str, status: int | None = None, exact: bool = False
) -> str:
    """A 4xx JSON error with a readable message that holds ``words``; the message."""
    where = f"{label}: {response.status_code} {response.text[:400]}"
    assert 400 <= response.status_code < 500, where
    if status is not None:
        assert response.status_code == status, where
    if response.headers["content-type"].startswith("text/html"):
        # A page (not the JSON API) answers a person: a readable HTML page naming the problem.
        assert " /api/" not in label and "Traceback" not in response.text, where
        for word in words:
            assert word.casefold() in response.text.casefold(), f"{where}\n(expected {word!r})"
        return str(response.text)
    assert response.headers["content-type"].startswith("application/json"), where
    error = response.json()["error"]
    assert isinstance(error["code"], str) and error["code"], where
    message = error["message"]
    assert isinstance(message, str) and len(message) > 10, where
    assert "Traceback" not in message and 'File "' not in message, where
    for word in words:
        found = word in message if exact else word.casefold() in message.casefold()
        assert found, f"{where}\n(expected {word!r} in the message)"
    return str(message)


class Sweep:
    """Sends malformed requests and counts them."""

    def __init__(self, client: TestClient, world: World) -> None:
        self.client, self.world = client, world
        self.sent = 0

    def url(self, endpoint: Endpoint, **override: str) -> str:
        values = {name: PATH_VALUES[name](self.world) for name, _ in endpoint.path_params()}
        values.update(override)
        return endpoint.path.format(**values)

    def send(self, endpoint: Endpoint, url: str | None = None, **kwargs: Any) -> Any:
        """With valid values for the route's required query parameters, unless given."""
        self.sent += 1
        names = {name for name, _ in endpoint.query_params()}
        params = {n: v for n, v in QUERY_VALUES.items() if n in names}
        params.update(kwargs.pop("params", None) or {})
        return self.client.request(
            endpoint.method, url or self.url(endpoint), params=params, **kwargs
        )

    def body(self, endpoint: Endpoint, body: Any) -> Any:
        """``body`` as JSON text (lone surrogates escaped, as a client's encoder would)."""
        return self.send(endpoint, content=json.dumps(body).encode(), headers=JSON_HEADERS)

    def valid_body(self, endpoint: Endpoint) -> Any:
        return VALID_BODIES[endpoint.key](self.world)


@pytest.fixture
def world(client: TestClient, double: ModelDouble) -> World:
    return make_world(client, double)


# -- coverage ---------------------------------------------------------------------------


def test_every_route_is_swept_or_exempt(client: TestClient) -> None:
    found = endpoints(client.app)
    keys = {e.key for e in found}
    assert not set(EXEMPT) - keys, f"EXEMPT names routes that no longer exist: {set(EXEMPT) - keys}"
    for table in (VALID_BODIES, REQUIRED_TEXT, FREE_FORM_CASES):
        stale = set(table) - keys
        assert not stale, f"the sweep names routes that no longer exist: {stale}"
    for endpoint in found:
        if endpoint.key in EXEMPT:
            assert not endpoint.has_input(), (
                f"{endpoint.key} takes input now: sweep it instead of exempting it"
            )
            continue
        assert endpoint.has_input(), (
            f"{endpoint.key} takes no input: list it in EXEMPT with the reason"
        )
        for name, kind in endpoint.path_params():
            assert name in PATH_VALUES, f"add a valid value for path parameter {name!r}"
            assert kind in (int, str), f"{endpoint.key}: teach the sweep path type {kind}"
        for name, kind in endpoint.query_params():
            known = kind in (int, str, bool) or (
                isinstance(kind, type) and issubclass(kind, StrEnum)
            )
            assert known, f"{endpoint.key}: teach the sweep query type {kind} ({name})"
        if endpoint.takes_body():
            assert endpoint.key in VALID_BODIES, f"add a valid body for {endpoint.key}"
            if endpoint.body_model() is None:
                assert endpoint.key in FREE_FORM_CASES, (
                    f"{endpoint.key} takes free-form JSON: add its cases to FREE_FORM_CASES"
                )
            else:
                model = endpoint.body_model()
                assert model is not None
                list(fields_of(model))  # every field type is one the sweep knows


# -- path ids -----------------------------------------------------------------------------

BAD_INT_IDS = [("abc", 400), ("1.5", 400), ("-1", None), ("0", None), (TOO_BIG_ID, 400)]


def test_bad_path_ids_are_refused_on_every_route(client: TestClient, world: World) -> None:
    sweep = Sweep(client, world)
    before = state(client, world)
    for endpoint in endpoints(client.app):
        if endpoint.key in EXEMPT:
            continue
        # A valid body, so the id is the only thing wrong.
        extra = {"json": sweep.valid_body(endpoint)} if endpoint.takes_body() else {}
        for name, kind in endpoint.path_params():
            if kind is int:
                for value, status in BAD_INT_IDS:
                    url = sweep.url(endpoint, **{name: value})
                    response = sweep.send(endpoint, url, **extra)
                    label = f"{endpoint.method} {url}"
                    message = assert_refused(response, label, status=status)
                    if response.status_code == 400:
                        assert name in message, label
                url = sweep.url(endpoint, **{name: UNKNOWN_ID})
                response = sweep.send(endpoint, url, **extra)
                assert_refused(response, f"{endpoint.method} {url}", UNKNOWN_ID, status=404)
            else:
                for value in ("no-such-thing", "y" * 3_000):
                    url = sweep.url(endpoint, **{name: value})
                    response = sweep.send(endpoint, url, **extra)
                    assert_refused(response, f"{endpoint.method} {url[:80]}", status=404)
    assert sweep.sent >= 130  # 22 routes with an id today
    assert state(client, world) == before


# -- query parameters ---------------------------------------------------------------------


def test_bad_query_parameters_are_refused_on_every_route(client: TestClient, world: World) -> None:
    sweep = Sweep(client, world)
    before = state(client, world)
    swept = 0
    for endpoint in endpoints(client.app):
        for name, kind in endpoint.query_params():
            swept += 1
            values = BAD_QUERY_VALUES.get(kind, ["q" * 5_000])
            for value in values:
                response = sweep.send(endpoint, params={name: value})
                label = f"{endpoint.method} {endpoint.path}?{name}={value[:20]}"
                assert_refused(response, label, name, status=400)
    assert swept >= 7  # limit, before, kind, adventure_id, q, limit, before_depth
    ranges = [
        ("/api/ai-calls", {"limit": 0}, "1"),
        ("/api/ai-calls", {"limit": 501}, "500"),
        ("/api/ai-calls", {"kind": "gossip"}, "narration"),
        ("/api/ai-calls", {"status": "meh"}, "cancelled"),
        (f"/api/adventures/{world.adventure}/actions", {"limit": 0}, "1"),
        (f"/api/adventures/{world.adventure}/actions", {"limit": 501}, "500"),
        (f"/api/adventures/{world.adventure}/cards", {"q": "q" * 201}, "200"),
    ]
    for url, params, limit in ranges:
        response = client.get(url, params=params)
        assert_refused(response, f"GET {url} {params}", limit, status=400)
    assert state(client, world) == before


# -- bodies -------------------------------------------------------------------------------


def _choices(args: tuple[Any, ...]) -> bool:
    """A list of a string enum's values (a refusal names the values allowed)."""
    return len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], StrEnum)


def fields_of(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(dotted name, kind) for every field of a body model, nested models included."""
    for name, info in model.model_fields.items():
        annotation = plain(info.annotation)
        dotted = f"{prefix}{name}"
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield dotted, "object"
            yield from fields_of(annotation, dotted + ".")
        elif annotation in (str, int, bool):
            yield dotted, annotation.__name__
        elif get_origin(annotation) is list and get_args(annotation) == (str,):
            yield dotted, "texts"
        elif get_origin(annotation) is list and _ids(get_args(annotation)):
            yield dotted, "ids"
        elif get_origin(annotation) is list and _choices(get_args(annotation)):
            yield dotted, "choices"
        elif isinstance(annotation, type) and issubclass(annotation, StrEnum):
            yield dotted, "choice"
        elif get_origin(annotation) is dict:  # an object the service checks key by key
            yield dotted, "mapping"
        else:
            raise AssertionError(f"{model.__name__}.{name}: teach the sweep type {annotation}")


WRONG_TYPES: dict[str, list[Any]] = {
    "str": [12345, True, ["x"], {"a": 1}],
    "int": ["abc", 1.5, [1], {"a": 1}],
    "bool": ["maybe", 7, ["x"]],
    "texts": ["x", [1], {"a": 1}],
    "choices": ["x", [1], {"a": 1}],
    "ids": ["x", 5, ["1"], [True], [1.5], [{"a": 1}], {"a": 1}],
    # One of a string enum: any other text (huge, or not Unicode) is as wrong as a number.
    "choice": ["x", 5, ["x"], {"a": 1}, HUGE, "\ud800"],
    "object": ["x", 5, [], {"bogus_field": 1}],
    "mapping": ["x", 5, [], {"bogus_field": {}}],
}


def _ids(args: tuple[Any, ...]) -> bool:
    """A list of whole numbers (ids), strict or not."""
    inner = args[0] if len(args) == 1 else None
    if get_origin(inner) is Annotated:
        inner = get_args(inner)[0]
    return inner is int


def with_field(body: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    *parents, leaf = dotted.split(".")
    node = out
    for parent in parents:
        node = node.setdefault(parent, {})
    node[leaf] = value
    return out


MALFORMED_BODIES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("not JSON", {"content": b"{not json", "headers": JSON_HEADERS}, ("not valid JSON",)),
    ("not UTF-8", {"content": b'{"x": "\xff"}', "headers": JSON_HEADERS}, ("UTF-8",)),
    (
        "nested too deep",
        {"content": b"[" * 5_000 + b"]" * 5_000, "headers": JSON_HEADERS},
        ("could not be read",),
    ),
    (
        "JSON sent as text/plain",
        {"content": b'{"title": "x"}', "headers": {"content-type": "text/plain"}},
        ("Content-Type: application/json",),
    ),
    ("a JSON array", {"json": [1, 2]}, ()),
    ("a JSON string", {"json": "hello"}, ()),
    ("a JSON number", {"json": 5}, ()),
]


def test_malformed_bodies_are_refused_on_every_route(client: TestClient, world: World) -> None:
    sweep = Sweep(client, world)
    before = state(client, world)
    for endpoint in endpoints(client.app):
        if endpoint.key in EXEMPT or not endpoint.takes_body():
            continue
        name = f"{endpoint.method} {endpoint.path}"
        for what, kwargs, words in MALFORMED_BODIES:
            assert_refused(sweep.send(endpoint, **kwargs), f"{name} with {what}", *words)
        model = endpoint.body_model()
        if model is None:
            for case in FREE_FORM_CASES[endpoint.key]:
                body = case.body(world)
                response = sweep.body(endpoint, body)
                label = f"{name} with {json.dumps(body)[:120]}"
                assert_refused(response, label, *case.words, status=case.status)
            continue
        valid = sweep.valid_body(endpoint)
        response = sweep.body(endpoint, valid | {"bogus_field": 1})
        assert_refused(response, f"{name} with an unknown field", "bogus_field", status=400)
        for dotted, kind in fields_of(model):
            leaf = dotted.rsplit(".", 1)[-1]
            for wrong in WRONG_TYPES[kind]:
                response = sweep.body(endpoint, with_field(valid, dotted, wrong))
                label = f"{name} with {dotted}={wrong!r}"
                assert_refused(response, label, leaf, status=400)
            if kind in ("str", "texts", "choices"):
                text = HUGE if kind == "str" else [HUGE]
                response = sweep.body(endpoint, with_field(valid, dotted, text))
                label = f"{name} with {dotted} of {len(HUGE):,} characters"
                message = assert_refused(response, label, leaf)
                allowed = LIMIT_WORDS if kind != "choices" else tuple(valid[dotted])
                assert any(w in message for w in allowed), f"{label}: {message[:200]}"
                text = "\ud800" if kind == "str" else ["\ud800"]
                response = sweep.body(endpoint, with_field(valid, dotted, text))
                assert_refused(response, f"{name} with a lone surrogate in {dotted}", "Unicode")
        for field in REQUIRED_TEXT.get(endpoint.key, ()):
            for empty in ("", "   "):
                response = sweep.body(endpoint, with_field(valid, field, empty))
                label = f"{name} with {field}={empty!r}"
                assert_refused(response, label, field, "empty", status=400)
    assert sweep.sent >= 300
    assert state(client, world) == before


# -- limits, named ------------------------------------------------------------------------


def test_oversized_text_is_refused_with_its_limit(client: TestClient, world: World) -> None:
    adventure, reply, card = world.adventure, world.reply, world.card
    cases: list[tuple[str, str, Any, str]] = [
        ("POST", "/api/adventures", {"title": "t" * 201}, "the limit is 200"),
        ("POST", "/api/adventures", {"title": "t", "opening": "o" * 20_001}, "20,000"),
        ("POST", "/api/adventures", {"title": "t", "persona": {"pronouns": "p" * 41}}, "40"),
        ("PATCH", f"/api/adventures/{adventure}", {"authors_note": "n" * 20_001}, "20,000"),
        ("POST", f"/api/adventures/{adventure}/actions", {"text": "a" * 8_001}, "8,000"),
        ("PATCH", f"/api/actions/{reply}", {"text": "n" * 20_001}, "20,000"),
        ("POST", f"/api/actions/{reply}/fork", {"name": "b" * 121}, "120"),
        ("POST", f"/api/adventures/{adventure}/cards", {"name": "c" * 121}, "120"),
        ("PATCH", f"/api/cards/{card}", {"keywords": ["k" * 81]}, "80"),
        ("PATCH", f"/api/cards/{card}", {"keywords": [f"k{i}" for i in range(31)]}, "30"),
        ("PATCH", f"/api/cards/{card}", {"entry": "e" * 8_001}, "8,000"),
        ("PATCH", "/api/settings", {"api_key": "k" * 2_001}, "2,000"),
    ]
    before = state(client, world)
    for method, url, body, limit in cases:
        response = client.request(method, url, json=body)
        assert_refused(response, f"{method} {url}", limit, status=400, exact=True)
    assert state(client, world) == before


# -- the story's own rules ----------------------------------------------------------------


def test_requests_the_story_cannot_honour_are_409_404_or_400(
    client: TestClient, double: ModelDouble
) -> None:
    blank = client.post("/api/adventures", json={"title": "x"}).json()["id"]  # no opening
    for verb, words in (
        ("retry", ("nothing to retry",)),
        ("undo", ("nothing to undo",)),
        ("redo", ("nothing to redo",)),
    ):
        response = client.post(f"/api/adventures/{blank}/{verb}")
        assert_refused(response, f"{verb} on an empty story", *words, status=409)
    refused = client.post(f"/api/adventures/{blank}/switch-take", json={"take": 1})
    assert_refused(refused, "switch-take on an empty story", "newest narration", status=409)

    other = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()
    double.script("The lamp gutters.")
    reply = client.post(f"/api/adventures/{other['id']}/actions", json={"text": "wait"}).json()
    missing = client.post(f"/api/adventures/{other['id']}/switch-take", json={"take": 7})
    assert_refused(missing, "switch-take to a missing take", "take must be one of 1", status=400)
    redo = client.post(f"/api/adventures/{other['id']}/redo")
    assert_refused(redo, "redo with nothing undone", "nothing to redo", status=409)
    fork = client.post(f"/api/actions/{UNKNOWN_ID}/fork", json={"name": "B"})
    assert_refused(fork, "fork of an unknown action", "no action", status=404)
    foreign = client.post(
        f"/api/adventures/{blank}/switch-branch", json={"branch_id": other["current_branch_id"]}
    )
    assert_refused(foreign, "switch to another adventure's branch", "no branch", status=404)
    not_export = client.post("/api/adventures/import", json={"format": "x"})
    assert_refused(not_export, "import of a non-export", "not a Talekeeper", status=400)
    dance = client.post(
        f"/api/adventures/{other['id']}/insights/dry-run", json={"type": "dance", "text": "x"}
    )
    assert_refused(dance, "dry run of type dance", "'type'", "do, say, story, continue", status=400)
    fixed = client.patch(f"/api/adventures/{blank}", json={"scenario": "lantern-coast"})
    assert_refused(fixed, "changing the scenario", "cannot change", status=400)
    action = reply["action"]["id"]
    insights = client.get(f"/api/actions/{action}/insights")
    assert_refused(insights, "Insights of a player action", "no Insights", status=404)
    carry = client.post(
        f"/api/adventures/{other['id']}/actions", json={"type": "continue", "text": "x"}
    )
    assert_refused(carry, "a continue with text", "continue", status=400)
    assert client.get(f"/api/adventures/{blank}").json()["length"] == 0


def test_a_refused_turn_is_json_even_when_a_stream_was_asked_for(client: TestClient) -> None:
    blank = client.post("/api/adventures", json={"title": "x"}).json()["id"]
    for url, body, status in (
        (f"/api/adventures/{blank}/actions", {"type": "dance", "text": "x"}, 400),
        (f"/api/adventures/{blank}/actions", {"type": "do", "text": ""}, 400),
        (f"/api/adventures/{UNKNOWN_ID}/actions", {"type": "do", "text": "x"}, 404),
        (f"/api/adventures/{blank}/retry", None, 409),
    ):
        response = client.post(url, json=body, headers=STREAM)
        assert_refused(response, f"streamed POST {url}", status=status)


def test_a_lone_surrogate_never_reaches_a_saved_setting(client: TestClient) -> None:
    """Saved, such a key broke every later model call (the header cannot be encoded)."""
    response = client.patch(
        "/api/settings", content=b'{"api_key": "\\udc00"}', headers=JSON_HEADERS
    )
    assert_refused(response, "api_key with a lone surrogate", "Unicode", status=400)
    assert client.get("/api/settings").json()["values"]["api_key_set"] is False
    assert client.get("/api/health").status_code == 200


# -- known failures outside the web layer -----------------------------------------------


def _import_status(
    client: TestClient, world: World, change: Callable[[dict[str, Any]], None]
) -> int:
    body = _export_with(change)(world)
    status: int = client.post("/api/adventures/import", json=body).status_code
    return status


@pytest.mark.parametrize(
    "where", [("branches", "fork_depth"), ("actions", "depth"), ("actions", "take")]
)
def test_import_refuses_integers_no_column_can_hold(
    client: TestClient, world: World, where: tuple[str, str]
) -> None:
    rows, key = where
    assert _import_status(client, world, lambda e: e[rows][0].update({key: 10**20})) == 400


def test_import_refuses_two_insights_for_one_action(client: TestClient, world: World) -> None:
    assert _import_status(client, world, lambda e: e["insights"].append(e["insights"][0])) == 400


def test_import_refuses_a_time_outside_the_calendar(client: TestClient, world: World) -> None:
    late = "9999-12-31T23:59:59-23:59"
    assert _import_status(client, world, lambda e: e["actions"][0].update(created_at=late)) == 400


def test_import_refuses_a_parent_that_is_not_a_number(client: TestClient, world: World) -> None:
    assert _import_status(client, world, lambda e: e["branches"][0].update(parent=[])) == 400


def test_settings_refuse_not_a_number(client: TestClient) -> None:
    assert client.patch("/api/settings", json={"temperature": "nan"}).status_code == 400


def test_settings_refuse_an_api_key_no_header_can_carry(client: TestClient) -> None:
    assert client.patch("/api/settings", json={"api_key": "ключ"}).status_code == 400


@pytest.mark.parametrize("url", ["http://[::1/v1", "http://127.0.0.1:99999/v1"])
def test_settings_refuse_an_endpoint_url_that_cannot_be_used(client: TestClient, url: str) -> None:
    assert client.patch("/api/settings", json={"endpoint_url": url}).status_code == 400

"""An app's backend driving Herald with its service key: Python's standard library only, no Herald code.

The server tests run it as the app's backend would be: `python3 backend.py <phase> <herald-url> <service-key>`.

- `users`: makes the app's users (Alice, Bob, Carol, Dave) before any of them signs in.
- `chat`: mirrors the app's order chat `order-42` (Alice, Bob, Carol), posts on Bob's behalf (twice: stored once),
  a silent system message and a system message, then adds Dave; prints what it stored, one JSON object a line.

Every answer is checked; anything unexpected ends it with status 1 and says what.
"""

import json
import sys
import urllib.error
import urllib.request


def call(base, key, method, path, body=None):
    """The status and JSON answer of one call to Herald's service API."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + "/v1/service" + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + key)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            text = response.read()
            return response.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def expect(what, status, answer, wanted):
    if status not in wanted:
        sys.exit(f"{what}: expected {wanted}, got {status} {answer}")
    return answer


def users(base, key):
    for user_id, name in [("alice", "Alice"), ("bob", "Bob"), ("carol", "Carol"), ("dave", "Dave")]:
        person = {"name": name, "picture": f"https://example.com/{user_id}.png"}
        answer = expect(f"user {user_id}", *call(base, key, "PUT", f"/users/{user_id}", person), {200})
        if answer != {"id": user_id, "name": name, "avatarURL": person["picture"]}:
            sys.exit(f"user {user_id}: answered {answer}")


def chat(base, key):
    created = expect("create order-42", *call(base, key, "POST", "/conversations", {
        "id": "order-42", "kind": "group", "title": "Order 42", "members": ["alice", "bob", "carol"], "owners": ["alice"],
    }), {201})
    if created["id"] != "order-42" or created["members"] != ["alice", "bob", "carol"] or created["owners"] != ["alice"]:
        sys.exit(f"create order-42: answered {created}")
    # The app's retry of the same creation finds the same conversation.
    expect("create order-42 again", *call(base, key, "POST", "/conversations", {
        "id": "order-42", "kind": "group", "title": "Order 42", "members": ["alice", "bob", "carol"], "owners": ["alice"],
    }), {200})

    stored = []
    for attempt in ("first", "retry"):
        message = expect(f"Bob's message ({attempt})", *call(base, key, "POST", "/conversations/order-42/messages", {
            "id": "bob-1", "sender": "bob", "text": "Is my order on its way?",
        }), {201} if attempt == "first" else {200})
        if message["senderId"] != "bob":
            sys.exit(f"Bob's message: answered {message}")
        if attempt == "first":
            stored.append(message)
        elif message != stored[0]:
            sys.exit(f"the retry stored another message: {message} after {stored[0]}")
    quiet = expect("silent system message", *call(base, key, "POST", "/conversations/order-42/messages", {
        "id": "note-1", "text": "Order 42 was packed", "silent": True,
    }), {201})
    if quiet["senderId"] != "" or quiet.get("silent") is not True:
        sys.exit(f"silent system message: answered {quiet}")
    stored.append(quiet)
    shipped = expect("system message", *call(base, key, "POST", "/conversations/order-42/messages", {
        "id": "note-2", "text": "Your order has shipped",
    }), {201})
    if shipped["senderId"] != "" or "silent" in shipped:
        sys.exit(f"system message: answered {shipped}")
    stored.append(shipped)
    added = expect("add Dave", *call(base, key, "POST", "/conversations/order-42/members", {"members": ["dave"]}), {200})
    if added["members"] != ["alice", "bob", "carol", "dave"]:
        sys.exit(f"add Dave: answered {added}")

    history = expect("history", *call(base, key, "GET", "/conversations/order-42/messages"), {200})["messages"]
    if [entry["id"] for entry in history[:3]] != ["bob-1", "note-1", "note-2"] or history[3]["event"]["type"] != "member_added":
        sys.exit(f"history: {history}")
    for entry in history:
        print(json.dumps(entry))


if __name__ == "__main__":
    phase, base, key = sys.argv[1:4]
    {"users": users, "chat": chat}[phase](base.rstrip("/"), key)

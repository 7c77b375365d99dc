"""The official A2A Python SDK (a2a-sdk) against rein's A2A server.

Arguments: the server's base URL and a token of the user whose agent `careful` is exposed;
OTHER_TOKEN names another user's. Prints one JSON report as its last line, which the Rust test
reads; an `error` key means the script itself failed.
"""

import asyncio
import json
import os
import sys
import threading
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from google.protobuf import json_format

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)

BASE, TOKEN = sys.argv[1], sys.argv[2]
OTHER = os.environ["OTHER_TOKEN"]
report = {}
pushed = []


class Receiver(BaseHTTPRequestHandler):
    """Where push notifications land."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        pushed.append(
            {
                "token": self.headers.get("X-A2A-Notification-Token"),
                "authorization": self.headers.get("Authorization"),
                "body": json.loads(body),
            }
        )
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def text_message(text, task_id=None, context_id=None):
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task_id:
        m.task_id = task_id
    if context_id:
        m.context_id = context_id
    return m


def data_message(data, task_id):
    part = json_format.ParseDict({"data": data}, Part())
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[part], task_id=task_id)


def as_dict(msg):
    return json_format.MessageToDict(msg)


def state(task):
    return TaskState.Name(task.status.state)


def artifact_text(task):
    return "".join(p.text for a in task.artifacts for p in a.parts)


def summary(task):
    return {
        "id": task.id,
        "contextId": task.context_id,
        "state": state(task),
        "answer": artifact_text(task),
        "status": as_dict(task.status.message) if task.status.HasField("message") else None,
    }


async def collect(events):
    """Each streamed item as its kind and what it says."""
    out = []
    async for e in events:
        if e.HasField("task"):
            out.append({"kind": "task", "state": state(e.task), "id": e.task.id})
        elif e.HasField("status_update"):
            s = e.status_update.status
            item = {"kind": "status", "state": TaskState.Name(s.state)}
            if s.HasField("message"):
                item["message"] = as_dict(s.message)
            out.append(item)
        elif e.HasField("artifact_update"):
            a = e.artifact_update.artifact
            out.append({"kind": "artifact", "text": "".join(p.text for p in a.parts), "last": e.artifact_update.last_chunk})
    return out


async def one(client, request):
    """A non-streaming client's send: the one task it answers."""
    tasks = [e.task async for e in client.send_message(request)]
    return tasks[-1]


async def refused(coro):
    try:
        await coro
    except Exception as e:  # the SDK's typed errors
        return f"{type(e).__name__}: {e}"
    return None


async def main():
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    push_url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"

    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(timeout=60) as anonymous:
        public = (await anonymous.get(f"{BASE}/.well-known/agent-card.json")).json()
        report["public"] = public
    async with httpx.AsyncClient(headers=auth, timeout=60) as http:
        card = await A2ACardResolver(http, f"{BASE}/a2a/careful").get_agent_card()
        report["card"] = as_dict(card)
        default_card = await A2ACardResolver(http, BASE).get_agent_card()
        blocking = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        default = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(default_card)

        # The default agent answers.
        hello = await one(default, SendMessageRequest(message=text_message("Say hello.")))
        report["default"] = summary(hello)

        # A streamed task asks for an approval, then goes on once it is given.
        first = await collect(streaming.send_message(SendMessageRequest(message=text_message("Add 2 and 2."))))
        report["asked"] = first
        task_id = first[0]["id"]
        report["approved"] = await collect(
            streaming.send_message(SendMessageRequest(message=data_message({"decision": "approve"}, task_id)))
        )

        # A blocking send waits for the approval; a push configuration set now hears the rest,
        # and a rejection's reason reaches the model.
        parked = await one(blocking, SendMessageRequest(message=text_message("Add 3 and 3.")))
        report["parked"] = summary(parked)
        config = await blocking.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=parked.id, url=push_url, token="tok-1")
        )
        report["pushConfig"] = as_dict(config)
        listed = await blocking.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=parked.id)
        )
        report["pushConfigs"] = as_dict(listed)
        rejected = await one(
            blocking,
            SendMessageRequest(message=data_message({"decision": "reject", "reason": "not now"}, parked.id)),
        )
        report["rejected"] = summary(rejected)
        for _ in range(100):
            if any(p["body"].get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED" for p in pushed):
                break
            await asyncio.sleep(0.1)
        report["pushed"] = list(pushed)

        # A question is answered with text.
        question = await one(blocking, SendMessageRequest(message=text_message("Deploy?")))
        report["question"] = summary(question)
        report["answered"] = summary(
            await one(blocking, SendMessageRequest(message=text_message("Deploy", task_id=question.id)))
        )

        # A waiting task is cancelled; a second cancel is refused.
        waiting = await one(blocking, SendMessageRequest(message=text_message("Add 4 and 4.")))
        cancelled = await blocking.cancel_task(CancelTaskRequest(id=waiting.id))
        report["cancelled"] = summary(cancelled)
        report["cancelAgain"] = await refused(blocking.cancel_task(CancelTaskRequest(id=waiting.id)))
        report["toEnded"] = await refused(one(blocking, SendMessageRequest(message=text_message("More?", task_id=waiting.id))))

        # A stream dropped after its first item is picked up again by the task's id.
        slow = SendMessageRequest(message=text_message("Add 5 and 5."))
        events = streaming.send_message(slow)
        opening = await events.__anext__()
        await events.aclose()
        report["opening"] = {"state": state(opening.task), "id": opening.task.id}
        report["resumed"] = await collect(streaming.subscribe(SubscribeToTaskRequest(id=opening.task.id)))
        report["subscribeEnded"] = await refused(collect(streaming.subscribe(SubscribeToTaskRequest(id=opening.task.id))))

        # The conversation goes on in the first task's context: a new task.
        context = (await blocking.get_task(GetTaskRequest(id=task_id))).context_id
        more = await one(blocking, SendMessageRequest(message=text_message("And again?", context_id=context)))
        report["continued"] = summary(more)
        report["firstContext"] = context

        got = await blocking.get_task(GetTaskRequest(id=task_id))
        report["got"] = as_dict(got)
        listed = await blocking.list_tasks(ListTasksRequest(context_id=context, include_artifacts=True))
        report["listed"] = [summary(t) for t in listed.tasks]
        report["listedTotal"] = listed.total_size
        paged = await blocking.list_tasks(ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED, page_size=1))
        report["paged"] = {"n": len(paged.tasks), "next": paged.next_page_token, "total": paged.total_size}

    # Another user does not find the task; a bad token is refused.
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {OTHER}"}, timeout=60) as http:
        theirs = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(default_card)
        report["otherUser"] = await refused(theirs.get_task(GetTaskRequest(id=task_id)))
        not_theirs = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        report["otherUsersAgent"] = await refused(not_theirs.get_task(GetTaskRequest(id=task_id)))
    async with httpx.AsyncClient(headers={"Authorization": "Bearer rein_bad"}, timeout=60) as http:
        bad = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        report["badToken"] = await refused(bad.get_task(GetTaskRequest(id=task_id)))

    receiver.shutdown()


try:
    asyncio.run(main())
except Exception:
    report["error"] = traceback.format_exc()
print(json.dumps(report))

"""A sample A2A 1.0 agent built with the official Python SDK (a2a-sdk), for rein's A2A client
test: it asks which city (input-required, a plain text question), then answers with the
weather there as an artifact. A message saying "slow" makes it work for a minute first (a
cancel ends it). Its card requires no token; every request must carry `Authorization: Bearer
sample-token`. With SAMPLE_STREAMING=0 its card says it does not stream. Prints `LISTENING
http://127.0.0.1:PORT` once it serves, then a line per cancelled task (`CANCELLED TASK_ID`)."""

import asyncio
import os
import socket
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import JSONResponse

from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
)

TOKEN = "sample-token"


class Weather(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        said = context.get_user_input().strip()
        if "slow" in said:
            await updater.start_work()
            await asyncio.sleep(60)
            return
        if len(task.history) <= 1 and context.current_task is None:
            await updater.requires_input(
                updater.new_agent_message([new_text_part("Which city?")])
            )
            return
        await updater.add_artifact(
            [new_text_part(f"Weather in {said}: sunny, 21 °C.")], name="forecast"
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue) -> None:
        print(f"CANCELLED {context.task_id}", flush=True)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


class Bearer(BaseHTTPMiddleware):
    async def dispatch(self, request, call_next):
        if request.method == "POST" and request.headers.get("authorization") != f"Bearer {TOKEN}":
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        return await call_next(request)


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="weather",
        description="Tells the weather in a city it asks for.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base}/rpc", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=os.environ.get("SAMPLE_STREAMING") != "0"),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="forecast", name="Forecast", description="The weather in a city.", tags=["weather"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Weather(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/rpc"))
    app.add_middleware(Bearer)
    print(f"LISTENING {base}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    server = uvicorn.Server(config)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())

"""Drives rein's Responses API with the official `openai` SDK: a response from an agent that
uses a tool, one with an uploaded image, one chained to the first, a background one polled to
completion, a background one cancelled, one parked on an approval, one streamed, and one streamed with a
reasoning summary. Prints one JSON report
on its last line.
Usage: python openai_responses.py BASE_URL TOKEN"""
import json
import sys
import time

import openai

base, token = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base + "/v1", api_key=token, max_retries=0)
report = {}


def shown(r):
    return {
        "id": r.id,
        "status": r.status,
        "text": r.output_text,
        "types": [item.type for item in r.output],
        "usage": r.usage.model_dump() if r.usage else None,
        "incomplete": r.incomplete_details.model_dump() if r.incomplete_details else None,
        "previous": r.previous_response_id,
        "error": r.error.model_dump() if r.error else None,
    }


def settled(r, until):
    for _ in range(300):
        if r.status in until:
            return r
        time.sleep(0.1)
        r = client.responses.retrieve(r.id)
    return r


first = client.responses.create(model="agent/calc", input="What is 17 * 23?")
report["plain"] = shown(first)

png = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13])
upload = client.files.create(file=("chart.txt", png), purpose="user_data")
report["upload"] = {"id": upload.id, "filename": upload.filename, "bytes": upload.bytes}
seen = client.responses.create(
    model="openai/gpt-4o-mini",
    instructions="IMAGE-TURN",
    input=[
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is in it?"},
                {"type": "input_image", "file_id": upload.id, "detail": "auto"},
            ],
        }
    ],
)
report["image"] = shown(seen)

chained = client.responses.create(
    model="agent/calc",
    input="And twice that?",
    previous_response_id=first.id,
    instructions="Answer briefly.",
)
report["chained"] = shown(chained)

background = client.responses.create(
    model="openai/gpt-4o-mini",
    instructions="BACKGROUND-TURN",
    input="Take your time.",
    background=True,
)
report["background_started"] = background.status
report["background"] = shown(settled(background, ("completed", "failed", "incomplete")))

stalled = client.responses.create(
    model="openai/gpt-4o-mini", instructions="STALL-TURN", input="Never finish.", background=True
)
time.sleep(0.5)
cancelled = client.responses.cancel(stalled.id)
report["cancelled"] = shown(settled(cancelled, ("cancelled",)))

parked = client.responses.create(model="agent/careful", input="What is 2 + 2?")
report["parked"] = shown(parked)

types, seqs, deltas, items = [], [], "", []
with client.responses.stream(model="agent/calc", input="Stream it: what is 17 * 23?") as stream:
    for event in stream:
        types.append(event.type)
        seqs.append(event.sequence_number)
        if event.type == "response.output_text.delta":
            deltas += event.delta
        if event.type == "response.output_item.done":
            items.append({"type": event.item.type, "id": event.item.id})
    final = stream.get_final_response()
report["streamed"] = {
    "types": types,
    "seqs": seqs,
    "deltas": deltas,
    "items": items,
    "final": shown(final),
    "final_ids": [item.id for item in final.output],
}

rtypes, rsummary = [], ""
with client.responses.stream(
    model="openai-responses/o4-mini", instructions="REASON-TURN", input="Think: 2 + 2?"
) as stream:
    for event in stream:
        rtypes.append(event.type)
        if event.type == "response.reasoning_summary_text.delta":
            rsummary += event.delta
    rfinal = stream.get_final_response()
report["reasoned"] = {
    "types": rtypes,
    "summary": rsummary,
    "final": shown(rfinal),
    "final_summary": rfinal.output[0].summary[0].text if rfinal.output[0].type == "reasoning" else None,
}

try:
    client.responses.retrieve("resp_" + "0" * 32)
    report["missing"] = "no error"
except openai.NotFoundError as e:
    report["missing"] = e.status_code

print(json.dumps(report))

"""Drives rein's OpenAI-compatible endpoint with the official `openai` SDK: a completion and a
streamed one from an agent that uses a tool, the model list, and an operation stopped by its
budget. Prints one JSON report on its last line.
Usage: python openai_sdk.py BASE_URL TOKEN"""
import json
import sys

import openai

base, token = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base + "/v1", api_key=token, max_retries=0)
report = {}

done = client.chat.completions.create(
    model="agent/calc", messages=[{"role": "user", "content": "What is 17 * 23?"}]
)
report["whole"] = {
    "content": done.choices[0].message.content,
    "finish_reason": done.choices[0].finish_reason,
    "usage": done.usage.model_dump() if done.usage else None,
    "id": done.id,
}

content, reasoning, usage, finish = "", "", None, None
for chunk in client.chat.completions.create(
    model="agent/calc",
    messages=[
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What is 17 * 23?"},
    ],
    stream=True,
    stream_options={"include_usage": True},
):
    if chunk.usage:
        usage = chunk.usage.model_dump()
    for c in chunk.choices:
        content += c.delta.content or ""
        reasoning += getattr(c.delta, "reasoning_content", None) or (c.delta.model_extra or {}).get("reasoning_content") or ""
        finish = c.finish_reason or finish
report["streamed"] = {"content": content, "reasoning": reasoning, "usage": usage, "finish_reason": finish}

report["models"] = [m.id for m in client.models.list()]

try:
    client.chat.completions.create(
        model="agent/tight", messages=[{"role": "user", "content": "What is 17 * 23?"}]
    )
    report["budget"] = "no error"
except openai.APIStatusError as e:
    report["budget"] = {"status": e.status_code, "message": str(e)}

try:
    for _ in client.chat.completions.create(
        model="agent/tight", messages=[{"role": "user", "content": "What is 17 * 23?"}], stream=True
    ):
        pass
    report["budget_streamed"] = "no error"
except openai.APIError as e:
    report["budget_streamed"] = {"message": str(e)}

print(json.dumps(report))

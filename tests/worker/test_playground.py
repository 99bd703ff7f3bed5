"""The playground end to end below the browser: a real inference worker consumes the `infer` queue and streams the
base model's and a trained tiny run's completions, token by token, through the real API's SSE endpoint."""

from tests.conftest import wait_while_progressing
from tests.sse import SseReader
from tests.worker.conftest import launch, wait_finished


def _follow(api_server: str, url: str, headers: dict[str, str]) -> SseReader:
    reader = SseReader(api_server + url, headers=headers).start()
    wait_while_progressing(lambda: reader, lambda r: r.finished.is_set(), lambda r: len(r.events),
                           message=f"the stream {url} to end")
    return reader


def test_base_and_tuned_completions_stream_token_by_token_from_the_inference_worker(
        api, api_server, auth_headers, worker, start_worker, sample_dataset, settings):
    run = launch(api, "lora", sample_dataset["id"], max_steps=2, eval_steps=2)
    final = wait_finished(api, run["id"])
    assert final["status"] == "succeeded", final["status_reason"]
    start_worker(settings.infer_queue)

    response = api.post("/playground", json={
        "project_id": final["project_id"], "run_ids": [run["id"]], "include_base": True,
        "prompt": "What is 2 plus 3?", "sampling": {"max_new_tokens": 12, "ignore_eos": True}})
    assert response.status_code == 202, response.text
    request = response.json()
    reader = _follow(api_server, request["events_url"], auth_headers)

    kinds = reader.kinds()
    assert kinds[-1] == "end" and "failed" not in kinds, reader.events
    for slot in request["slots"]:
        mine = [(event, data) for event, _, data in reader.events
                if isinstance(data, dict) and data.get("slot") == slot["slot"]]
        tokens = [data["text"] for event, data in mine if event == "token"]
        done = [data for event, data in mine if event == "done"]
        assert len(tokens) >= 2, f"slot {slot['slot']}: tokens arrive one by one before done: {mine}"
        assert [event for event, _ in mine][-1] == "done" and len(done) == 1
        assert "".join(tokens) == done[0]["text"] and done[0]["token_count"] == 12

    # A browser that connects after generation ended still reads every token, from the first.
    late = _follow(api_server, request["events_url"], auth_headers)
    assert late.events == reader.events

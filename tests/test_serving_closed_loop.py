"""The closed-loop load generator (`serve --concurrency N`, costmodel/serving/engine.py): N clients,
each sending its next request when its previous one finishes. Hand-checked arrival times, its
limits (one client; as many clients as requests), Little's law while every client is busy, the
CLI's errors and the load's name in the JSON and CSV."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from cli import main
from costmodel.config import ConfigError
from costmodel.serving import serve
from costmodel.serving.api import make_requests
from costmodel.serving.engine import simulate
from costmodel.serving.kvcache import BlockPool
from costmodel.serving.schedulers import VLLMScheduler
from costmodel.serving.workload import Request

ONE_STEP = lambda query, keys, emitting: 1.0  # noqa: E731  (time counted in steps)


def requests(*rows: tuple[int, int]) -> list[Request]:
    """(prompt, output) rows; the arrival times are the closed loop's to set."""
    return [Request(i, 0.0, p, o) for i, (p, o) in enumerate(rows)]


def test_one_client_sends_each_request_when_the_previous_one_finishes() -> None:
    """One step per unit of time, budget 8. r0 (4 + 3): its prompt and first token in step 1, then
    two decodes: done at 3; r1 (6 + 2) is sent at 3, done at 5; r2 (3 + 1) sent at 5, done at 6."""
    timeline = simulate(requests((4, 3), (6, 2), (3, 1)), VLLMScheduler(BlockPool(100, 4), 8, 8), ONE_STEP, 512,
                        concurrency=1)
    assert [s.request.arrival_s for s in timeline.sequences] == [0.0, 3.0, 5.0]
    assert [s.token_times for s in timeline.sequences] == [[1.0, 2.0, 3.0], [4.0, 5.0], [6.0]]
    assert [s.entries for s in timeline.steps] == [[(0, 4)], [(0, 1)], [(0, 1)], [(1, 6)], [(1, 1)], [(2, 3)]]


def test_two_clients_on_a_hand_trace() -> None:
    """Two clients: r0 (2 + 1) and r1 (2 + 3) at 0, one step together; r0 ends at 1, so r2 (2 + 1)
    goes at 1 and runs beside r1's decode; r2 ends at 2 and r3 (2 + 1) goes at 2; r1 ends at 3."""
    timeline = simulate(requests((2, 1), (2, 3), (2, 1), (2, 1)), VLLMScheduler(BlockPool(100, 4), 8, 8), ONE_STEP,
                        512, concurrency=2)
    by_id = {s.request.id: s for s in timeline.sequences}
    assert [by_id[i].request.arrival_s for i in range(4)] == [0.0, 0.0, 1.0, 2.0]
    assert [by_id[i].token_times[-1] for i in range(4)] == [1.0, 3.0, 2.0, 3.0]
    assert [s.entries for s in timeline.steps] == [[(0, 2), (1, 2)], [(1, 1), (2, 2)], [(1, 1), (3, 2)]]


def test_one_client_on_the_real_step_time() -> None:
    """Through serve() with the kernel model's steps (steady decoding advanced many steps at a
    time): each request is sent at exactly its predecessor's last token, never earlier."""
    run = serve("llama3-8b", concurrency=1, requests=6, prompt="uniform:32:700", output="uniform:2:90", seed=3)
    frame = run.requests
    assert frame["arrival_s"].iloc[0] == 0.0
    assert frame["arrival_s"].iloc[1:].tolist() == frame["finish_s"].iloc[:-1].tolist()
    assert (frame["queueing_s"] == 0).all()
    assert run.summary()["batch"]["max_sequences"] == 1


def test_as_many_clients_as_requests_is_all_at_once() -> None:
    """N = requests sends every request at 0: the same run, step for step, as Poisson at an
    infinite rate (the same lengths: a closed loop draws them as that stream does)."""
    options = dict(requests=60, prompt="uniform:16:900", output="uniform:1:200", seed=5)
    closed, burst = serve("llama3-8b", concurrency=60, **options), serve("llama3-8b", rate=math.inf, **options)
    columns = [c for c in burst.requests.columns if c != "load"]
    assert closed.requests[columns].equals(burst.requests[columns])
    assert closed.steps.equals(burst.steps)
    assert (closed.requests["load"] == "concurrency").all() and (burst.requests["load"] == "poisson").all()


def outstanding_area(frame, until: float) -> tuple[float, set[int]]:
    """The integral of the requests sent and not finished over [0, until], and the counts seen
    between events (after all events at one time are applied)."""
    events = sorted([(t, 1) for t in frame["arrival_s"]] + [(t, -1) for t in frame["finish_s"]])
    area, inside, last, seen = 0.0, 0, 0.0, set()
    for index, (time, change) in enumerate(events):
        if time > until:
            break
        area += inside * (time - last)
        inside, last = inside + change, time
        if index + 1 < len(events) and events[index + 1][0] > time and time < until:
            seen.add(inside)
    return area + inside * (until - last), seen


@pytest.mark.parametrize("concurrency, replicas", [(16, 1), (6, 2)])
def test_littles_law_while_every_client_is_busy(concurrency: int, replicas: int) -> None:
    """Until the last request is sent, exactly N are outstanding at every moment: the time
    average of the requests in the system is N, and so (Little's law) the completion rate times
    the mean time in system over that window is N as well."""
    run = serve("llama3-8b", concurrency=concurrency, requests=200, prompt="uniform:64:1024",
                output="uniform:16:256", seed=1, replicas=replicas)
    frame = run.requests
    full = float(frame["arrival_s"].max())  # the queue of requests to send is empty from here
    area, seen = outstanding_area(frame, full)
    assert seen == {concurrency}
    assert area / full == pytest.approx(concurrency, rel=1e-12)
    finished = frame[frame["finish_s"] <= full]
    assert len(finished) == len(frame) - concurrency  # the last N are the ones still out at `full`
    # every client's next request leaves at one of the run's finishing times
    assert set(frame["arrival_s"].iloc[concurrency:]) <= set(frame["finish_s"])


def test_two_replicas_round_robin_serve_one_client_each() -> None:
    """Equal requests, two clients, two replicas: the two finish together and round-robin sends
    one of the next pair to each replica, so each replica serves one client's stream: the same
    latencies as one client on one replica."""
    one = serve("llama3-8b", concurrency=1, requests=8, prompt="700", output="90")
    two = serve("llama3-8b", concurrency=2, requests=16, prompt="700", output="90", replicas=2)
    for name in ("ttft_s", "tpot_s", "e2e_s", "arrival_s", "finish_s"):
        assert np.sort(two.requests[name].to_numpy()) == pytest.approx(np.repeat(one.requests[name].to_numpy(), 2),
                                                                       rel=1e-12)


def test_a_trace_gives_the_lengths_in_its_order(tmp_path) -> None:
    """With --trace, a closed loop takes the trace's lengths in its order; its arrivals are
    the loop's."""
    path = tmp_path / "t.jsonl"
    rows = [(5.0, 300, 7), (0.5, 100, 3), (9.0, 40, 2)]
    path.write_text("".join(json.dumps({"arrival": a, "prompt_tokens": p, "output_tokens": o}) + "\n"
                            for a, p, o in rows))
    run = serve("llama3-8b", trace=str(path), concurrency=1)
    frame = run.requests
    assert frame["prompt_tokens"].tolist() == [100, 300, 40]  # the trace sorted by its arrivals
    assert frame["arrival_s"].iloc[0] == 0.0 and frame["arrival_s"].iloc[1:].tolist() == frame["finish_s"].iloc[:-1].tolist()
    assert run.setup["load"] == "concurrency" and run.setup["trace"] == str(path)


@pytest.mark.parametrize("options, message", [
    ({"concurrency": 4, "rate": 2.0}, "--concurrency and --rate are two load generators"),
    ({"concurrency": 0}, "--concurrency must be a positive number of clients, got 0"),
    ({"concurrency": -2}, "--concurrency must be a positive number of clients"),
    ({"concurrency": 2.5}, "--concurrency must be a positive number of clients"),
    ({}, "give --rate (requests per second), --concurrency (clients) or --trace"),
])
def test_make_requests_refuses(options, message) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_requests(requests=5, **options)


@pytest.mark.parametrize("args, message", [
    (["--concurrency", "4", "--rate", "3"], "--concurrency and --rate are two load generators: give one of them."),
    (["--concurrency", "0"], "--concurrency must be a positive number of clients, got 0."),
    (["--concurrency", "-1"], "--concurrency must be a positive number of clients, got -1."),
    (["--concurrency", "4", "--rates", "1,2"], "--concurrency and --rates are two load generators"),
    (["--concurrency", "4", "--disaggregate", "1:1"], "--concurrency runs aggregated replicas"),
    (["--concurrency", "x"], "--concurrency"),
    ([], "give exactly one of --rate (requests per second), --concurrency N or --trace FILE."),
])
def test_serve_concurrency_bad_input(args, message, capsys) -> None:
    code = main(["serve", "--model", "llama3-8b", "--requests", "3", *args])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_serve_json_and_csv_name_the_load(tmp_path, capsys) -> None:
    out = tmp_path / "r.csv"
    assert main(["serve", "--model", "llama3-8b", "--concurrency", "4", "--requests", "12", "--json",
                 "--csv", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["setup"]["load"], summary["setup"]["concurrency"], summary["setup"]["rate"]) == \
        ("concurrency", 4, None)
    assert summary["requests"] == 12 and summary["throughput"]["output_tokens_per_s"] > 0
    header, *lines = out.read_text().splitlines()
    assert header.split(",")[-1] == "load" and {line.split(",")[-1] for line in lines} == {"concurrency"}
    assert main(["serve", "--model", "llama3-8b", "--concurrency", "4", "--requests", "12"]) == 0
    assert "from 4 concurrent clients, closed loop (seed 0)" in capsys.readouterr().out
    assert main(["serve", "--model", "llama3-8b", "--rate", "5", "--requests", "5", "--json"]) == 0
    setup = json.loads(capsys.readouterr().out)["setup"]
    assert (setup["load"], setup["concurrency"]) == ("poisson", None)


def test_the_engine_refuses_no_clients() -> None:
    from costmodel.serving.schedulers import SchedulingError

    with pytest.raises(SchedulingError, match="--concurrency must be a positive number of clients, got 0"):
        simulate(requests((4, 3)), VLLMScheduler(BlockPool(100, 4), 8, 8), ONE_STEP, 512, concurrency=0)

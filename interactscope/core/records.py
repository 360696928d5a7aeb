"""Records both benchmarks use: tool specs and calls (engines, streaming, EgoBench) and the
per-stage timings of a run (docs/protocol.md#run-folder-contract)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class StrictModel(BaseModel):
    """Unknown fields refused; NaN/Infinity can never be a time: rejected at validation."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ToolSpec(StrictModel):
    """One tool offered to the model: ``parameters`` is a JSON Schema object."""

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolCall(BaseModel):
    """One tool call: ``name`` and JSON ``arguments``."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


_STAGES = ("load_s", "collect_s", "decode_s", "process_s", "model_s", "write_s")


class StageTimings(BaseModel):
    """Where the time of a ``collect`` went (``run.json``: ``summary.timings`` over every
    invocation, ``invocations[k].summary.timings`` for one; docs/protocol.md#run-folder-contract).

    Seconds of wall time (``time.perf_counter``): ``load_s`` and ``collect_s`` are the
    invocation's wall clock; the stages (decode, process, model, write) are summed over the
    decision points, so with batches or concurrent requests they can add up to more than
    ``collect_s`` (both are recorded; :meth:`line` labels them "wall" and "summed over requests").
    The run's ``summary.timings`` is :meth:`combine` of every invocation's, so after a resume its
    loop and stage seconds cover the whole run: an invocation interrupted by Ctrl-C, SIGTERM or
    an error records its timings up to the stop; one killed outright (SIGKILL, OOM) cannot write
    at that moment, so the driver checkpoints its timings after each synced batch
    (``RUN/.checkpoint.json``) and the next invocation gives the killed one its last checkpoint:
    what it spent after that batch (at most one batch's work) is lost, and killed before its
    first checkpoint its stage times are lost altogether (``summary`` null), while its records
    still count:

    - ``load_s``: building the adapter and ``adapter.prepare`` (model load, server preflight),
      apart from everything else;
    - ``collect_s``: the decision-point loop after loading (the rest of the invocation);
    - ``decode_s``: building observations (media decode, causal frames/audio, the request);
    - ``process_s``: request preparation inside the engine (chat template + HF processor +
      copy to the device), from the records' ``process_s`` where the engine reports it;
    - ``model_s``: the model itself (``generate`` / the server call): the records' ``model_s``
      where the engine reports it, else their ``latency_s``;
    - ``write_s``: appending and fsyncing records;
    - ``other_s``: ``collect_s`` minus the four stages above (prompt building, tool execution,
      scheduling), never below 0.

    Derived (``None`` when their denominator is 0): ``outside_model_share`` = (``collect_s`` −
    ``model_s``) / ``collect_s``, clipped to [0, 1] (with concurrent requests ``model_s`` sums
    overlapping calls and can exceed ``collect_s``); ``prompt_tokens_per_s`` /
    ``completion_tokens_per_s`` = tokens / ``model_s``; ``prefix_cache_hit_rate`` =
    ``cached_tokens`` / ``cached_of_prompt_tokens``, over the records whose engine reports
    cached prompt tokens (vLLM ``num_cached_tokens``, OpenAI
    ``usage.prompt_tokens_details.cached_tokens``, the text causal LM's prefix cache).
    """

    model_config = ConfigDict(extra="forbid")

    load_s: float = 0.0
    collect_s: float = 0.0
    decode_s: float = 0.0
    process_s: float = 0.0
    model_s: float = 0.0
    write_s: float = 0.0
    other_s: float = 0.0
    outside_model_share: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_per_s: float | None = None
    completion_tokens_per_s: float | None = None
    cached_tokens: int = 0
    cached_of_prompt_tokens: int = 0
    prefix_cache_hit_rate: float | None = None

    def derived(self) -> StageTimings:
        """A copy with seconds rounded to ms and ``other_s`` and the ratios recomputed."""
        d = {k: round(float(getattr(self, k)), 3) for k in _STAGES}
        inner = d["decode_s"] + d["process_s"] + d["model_s"] + d["write_s"]
        c, m = d["collect_s"], d["model_s"]
        return self.model_copy(
            update={
                **d,
                "other_s": round(max(0.0, c - inner), 3),
                "outside_model_share": round(min(1.0, max(0.0, c - m) / c), 4) if c else None,
                "prompt_tokens_per_s": round(self.prompt_tokens / m, 2) if m else None,
                "completion_tokens_per_s": round(self.completion_tokens / m, 2) if m else None,
                "prefix_cache_hit_rate": (
                    round(self.cached_tokens / self.cached_of_prompt_tokens, 4)
                    if self.cached_of_prompt_tokens
                    else None
                ),
            }
        )

    @classmethod
    def combine(cls, parts: list[StageTimings]) -> StageTimings:
        """The sum of several invocations' timings (seconds and token counts added), derived."""
        out = cls()
        counts = ("prompt_tokens", "completion_tokens", "cached_tokens", "cached_of_prompt_tokens")
        for p in parts:
            for k in (*_STAGES, *counts):
                setattr(out, k, getattr(out, k) + getattr(p, k))
        return out.derived()

    def _overlap(self) -> str:
        """``"; summed 1.8x the wall (concurrent requests)"`` when the summed stages exceed the
        loop's wall time by more than 1 % (batches, ``max_concurrency``), else ``""``."""
        inner = self.decode_s + self.process_s + self.model_s + self.write_s
        if self.collect_s <= 0 or inner <= 1.01 * self.collect_s:
            return ""
        return f"; summed {inner / self.collect_s:.1f}x the wall (concurrent requests)"

    def line(self) -> str:
        """The one-line form the CLI prints after ``collect``: the loop's wall seconds and the
        stage seconds summed over requests, labelled (summed can exceed wall when requests run
        concurrently; ``_overlap`` says by how much)."""
        share = (  # a share of a sub-second run is noise
            ""
            if self.outside_model_share is None or self.collect_s < 1.0
            else f", {self.outside_model_share:.0%}"
        )
        hit = self.prefix_cache_hit_rate
        return (
            f"load {self.load_s:.1f} s; loop {self.collect_s:.1f} s wall, stages summed over "
            f"requests: decode {self.decode_s:.1f} / process {self.process_s:.1f} / model "
            f"{self.model_s:.1f} / write {self.write_s:.1f} / other {self.other_s:.1f} s "
            f"(outside the model{share})"
            + self._overlap()
            + (
                f"; {self.completion_tokens_per_s:.1f} tok/s out"
                if self.completion_tokens_per_s
                else ""
            )
            + (f"; prefix cache {hit:.0%}" if hit is not None else "")
        )

"""Backend ``vllm``, tested up to the engine call with a recording fake ``vllm`` module.

vLLM needs a CUDA GPU and cannot run here; the fake records the ``LLM(...)`` arguments and every
``generate`` call, so these tests check what the real engine would be given: the chat-template
prompt (silence token, stream time, one placeholder per item), ``multi_modal_data`` (exactly the
causal frames, round(t·16000) audio samples), preflight's limits and pixel reduction, and that an
engine exception fails only its own request.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from interactscope.streaming.adapters.base import AdapterError, AdapterOutput, DecisionRequest
from interactscope.streaming.settings import Settings
from tests.helpers.fake_vllm import (
    FakeLLM,
)
from tests.helpers.vllm_adapter import fake_messages, fake_vllm, frame, make_adapter, make_request  # noqa: F401

SR = 16000


# --------------------------------------------------------------------------- fake vllm


# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- tests


def test_missing_vllm_is_a_clear_error(monkeypatch) -> None:
    from interactscope.streaming.adapters.vllm_backend import VLLMAdapter

    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError
    with pytest.raises(AdapterError, match=r"interactscope\[vllm\]"):
        VLLMAdapter("q", {"backend": "vllm", "checkpoint": "x"}, Settings())


def test_registry_knows_the_backend() -> None:
    from interactscope.streaming.adapters.registry import BUILTIN_BACKENDS, adapter_class

    assert "vllm" in BUILTIN_BACKENDS
    assert adapter_class("vllm").backend == "vllm"


def test_engine_arguments_and_request_construction(fake_vllm, monkeypatch, tmp_path) -> None:
    adapter = make_adapter(monkeypatch, limit_mm_per_prompt={"image": 32, "audio": 1})
    t = 3.5
    out = adapter.respond(make_request(tmp_path, t))
    assert isinstance(out, AdapterOutput) and out.text == "<SILENT>"

    llm = FakeLLM.instances[-1]
    assert llm.kwargs["model"] == "Qwen/Qwen2.5-Omni-7B"
    assert llm.kwargs["enable_prefix_caching"] is True
    assert llm.kwargs["max_model_len"] == 32768
    assert llm.kwargs["limit_mm_per_prompt"] == {"image": 32, "audio": 1}
    assert llm.sampling[0].kwargs == {"temperature": 0.0, "max_tokens": 64}

    (inp,) = llm.calls[0]
    prompt = inp["prompt"]
    assert "<SILENT>" in prompt and "3.5 s" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    mm = inp["multi_modal_data"]
    # exactly the causal frames (seconds 0..3), in prompt order, as given
    assert len(mm["image"]) == 4 == prompt.count("<|IMAGE|>")
    for k, img in enumerate(mm["image"]):
        np.testing.assert_array_equal(img, frame(k))
    # the audio [0, t] at 16 kHz: round(t * 16000) samples
    ((wave, sr),) = mm["audio"]
    assert sr == SR and wave.shape == (round(t * SR),) and wave.dtype == np.float32
    assert prompt.count("<|AUDIO|>") == 1
    assert out.prompt_tokens == len(prompt.split()) and out.completion_tokens == 1


def test_one_generate_call_per_batch(fake_vllm, monkeypatch, tmp_path) -> None:
    adapter = make_adapter(monkeypatch)
    reqs = [make_request(tmp_path, t, f"it-{i % 2}") for i, t in enumerate([1.0, 2.0, 3.0, 4.0])]
    outs = adapter.respond_batch(reqs)
    assert all(isinstance(o, AdapterOutput) for o in outs)
    llm = FakeLLM.instances[-1]
    assert len(llm.calls) == 1 and len(llm.calls[0]) == 4
    assert [len(i["multi_modal_data"]["image"]) for i in llm.calls[0]] == [2, 3, 4, 5]
    assert outs[0].extra["batch_size"] == 4


def test_engine_exception_fails_only_its_request(fake_vllm, monkeypatch, tmp_path) -> None:
    adapter = make_adapter(monkeypatch)
    adapter.engine().fail_if = lambda inp: "stream time: 3.0 s" in inp["prompt"]
    outs = adapter.respond_batch([make_request(tmp_path, t) for t in (2.0, 3.0, 4.0)])
    assert isinstance(outs[0], AdapterOutput) and isinstance(outs[2], AdapterOutput)
    assert isinstance(outs[1], AdapterError)
    assert "it-1" in str(outs[1]) and "t=3s" in str(outs[1]) and "illegal memory" in str(outs[1])
    # the failed batch was retried one request at a time
    assert [len(c) for c in FakeLLM.instances[-1].calls] == [3, 1, 1, 1]

    # a whole-engine failure is an error on every record, never silence
    adapter.engine().fail_if = lambda inp: True
    outs = adapter.respond_batch([make_request(tmp_path, t) for t in (2.0, 3.0)])
    assert all(isinstance(o, AdapterError) for o in outs)


def test_preflight_rejects_item_limit(fake_vllm, monkeypatch, tmp_path) -> None:
    adapter = make_adapter(monkeypatch, limit_mm_per_prompt={"image": 4, "audio": 1})
    with pytest.raises(AdapterError) as err:
        adapter.preflight([make_request(tmp_path, 2.0), make_request(tmp_path, 5.0)])
    msg = str(err.value)
    assert "it-1 t=5s" in msg and "6 image" in msg and "it-1 t=2s" not in msg
    # respond_batch refuses such a request itself instead of crashing the engine
    outs = adapter.respond_batch([make_request(tmp_path, 2.0), make_request(tmp_path, 5.0)])
    assert isinstance(outs[0], AdapterOutput) and isinstance(outs[1], AdapterError)


def test_preflight_reduces_pixels_to_fit(fake_vllm, monkeypatch, tmp_path) -> None:
    # 720x1280 frames: about 1196 tokens each at full size; 8 of them do not fit 6000 tokens
    adapter = make_adapter(monkeypatch, h=720, w=1280, max_model_len=6000)
    reqs = [make_request(tmp_path, 2.0), make_request(tmp_path, 7.0)]
    report = adapter.preflight(reqs)
    assert report.reduced and report.max_side is not None and report.max_side < 1280
    assert report.worst_tokens <= 6000
    assert adapter.describe()["frames_max_side"] == report.max_side
    adapter.respond_batch(reqs)
    for inp in FakeLLM.instances[-1].calls[-1]:
        assert all(max(im.shape[:2]) <= report.max_side for im in inp["multi_modal_data"]["image"])
        assert len(inp["multi_modal_data"]["image"]) in (3, 8)


def test_preflight_without_reduction_names_the_request(fake_vllm, monkeypatch, tmp_path) -> None:
    adapter = make_adapter(
        monkeypatch, h=720, w=1280, max_model_len=6000, preflight={"reduce_pixels": False}
    )
    with pytest.raises(AdapterError, match=r"it-1 t=7s.*max_model_len=6000"):
        adapter.preflight([make_request(tmp_path, 2.0), make_request(tmp_path, 7.0)])
    # too small a context even at the smallest allowed side is an error as well
    tight = make_adapter(monkeypatch, h=720, w=1280, max_model_len=500)
    with pytest.raises(AdapterError, match="even at frames.max_side=224"):
        tight.preflight([make_request(tmp_path, 7.0)])


def test_preflight_passes_small_requests_unchanged(fake_vllm, monkeypatch, tmp_path) -> None:
    adapter = make_adapter(monkeypatch, settings=Settings(frames={"max_side": 448}))
    report = adapter.preflight([make_request(tmp_path, 4.0)])
    assert not report.reduced and report.max_side == 448 and report.checked == 1


@pytest.mark.parametrize("n_frames", [1, 2, 3, 31, 32])
def test_video_mode_pads_to_even(fake_vllm, monkeypatch, tmp_path, n_frames) -> None:
    adapter = make_adapter(monkeypatch, frames_as="video")
    out = adapter.respond(make_request(tmp_path, n_frames - 1 + 0.5))
    (inp,) = FakeLLM.instances[-1].calls[-1]
    (video,) = inp["multi_modal_data"]["video"]
    assert video.shape[0] == n_frames + n_frames % 2
    assert inp["mm_processor_kwargs"] == {"do_sample_frames": False, "fps": 1.0}
    assert "image" not in inp["multi_modal_data"]
    np.testing.assert_array_equal(video[-1], frame(n_frames - 1))
    assert inp["prompt"].count("<|VIDEO|>") == 1 and "<|IMAGE|>" not in inp["prompt"]
    assert out.extra["frames_true"] == n_frames
    assert out.extra["frames_sent"] == video.shape[0]
    assert FakeLLM.instances[-1].kwargs["limit_mm_per_prompt"] == {
        "image": 4,
        "video": 1,
        "audio": 2,
    }


# --------------------------------------------------------------------------- real prompt pipeline


@pytest.fixture(scope="module")
def av_clip(tmp_path_factory) -> Path:
    from tests.helpers.media_fixtures import write_av_clip

    return write_av_clip(tmp_path_factory.mktemp("clip") / "clip.mp4", seconds=6)


@pytest.mark.parametrize("frames_as", ["image", "video"])
@pytest.mark.parametrize("t", [1.0, 3.5, 6.0])
def test_real_observation_is_causal(
    fake_vllm, monkeypatch, tmp_path, av_clip, t, frames_as
) -> None:
    """Observer + build_messages + the adapter: the engine gets exactly the causal frames and
    round(t * 16000) audio samples, and the prompt states the silence token and stream time."""
    from interactscope.streaming.adapters.vllm_backend import VLLMAdapter
    from interactscope.streaming.protocol.observation import Observer
    from interactscope.streaming.protocol.prompts import fmt_time

    settings = Settings()
    request = make_request(tmp_path, t)
    obs = Observer(av_clip, settings, bench_root=av_clip.parent).observe(t, request.interaction)
    request.observation = obs
    adapter = VLLMAdapter(
        "qwen-test",
        {
            "backend": "vllm",
            "checkpoint": "Qwen/Qwen2.5-Omni-7B",
            "template": "tokenizer",
            "frames_as": frames_as,
        },
        settings,
    )
    out = adapter.respond(request)
    assert isinstance(out, AdapterOutput)
    (inp,) = FakeLLM.instances[-1].calls[-1]
    prompt, mm = inp["prompt"], inp["multi_modal_data"]
    assert settings.silence_token in prompt and f"t = {fmt_time(t)}" in prompt

    assert obs.frames and all(f.pts_s <= t + 1e-9 for f in obs.frames)
    if frames_as == "image":
        assert len(mm["image"]) == len(obs.frames) == prompt.count("<|IMAGE|>")
        sent = mm["image"]
    else:
        (video,) = mm["video"]
        assert prompt.count("<|VIDEO|>") == 1 and "image" not in mm
        assert video.shape[0] == len(obs.frames) + len(obs.frames) % 2
        sent = list(video[: len(obs.frames)])
        np.testing.assert_array_equal(video[-1], obs.frames[-1].image)
    for img, f in zip(sent, obs.frames, strict=True):
        np.testing.assert_array_equal(img, f.image)
    ((wave, sr),) = mm["audio"]
    assert sr == SR and wave.shape == (round(t * SR),)
    np.testing.assert_array_equal(wave, obs.audio)


def test_zero_audio_attachments_and_audio_window(fake_vllm, monkeypatch, tmp_path) -> None:
    """t = 0: no audio item; an image attachment stays an image in video mode; audio past the
    window keeps its newest samples; ``processor_kwargs`` (transformers' key) is accepted."""
    adapter = make_adapter(
        monkeypatch,
        frames_as="video",
        audio_window_s=2.0,
        processor_kwargs={"max_pixels": 200704},
    )
    attach = np.full((30, 40, 3), 200, np.uint8)

    def messages(r: DecisionRequest) -> list[dict[str, Any]]:
        msgs = fake_messages(r)
        msgs[1]["content"].insert(
            0, {"type": "image", "image": attach, "pts_s": 1.0, "attachment": True}
        )
        return msgs

    monkeypatch.setattr(adapter, "_messages", messages)
    outs = adapter.respond_batch([make_request(tmp_path, 0.0), make_request(tmp_path, 5.0)])
    assert all(isinstance(o, AdapterOutput) for o in outs), outs
    first, second = FakeLLM.instances[-1].calls[-1]
    assert "audio" not in first["multi_modal_data"] and "<|AUDIO|>" not in first["prompt"]
    mm = second["multi_modal_data"]
    np.testing.assert_array_equal(mm["image"][0], attach)
    assert mm["video"][0].shape[0] == 6  # frames 0..5
    assert second["prompt"].count("[") == 1  # labels after the first frame replaced by one line
    assert "(video of 6 frames at 0 s, 1 s, 2 s, 3 s, 4 s, 5 s)" in second["prompt"]
    ((wave, _),) = mm["audio"]
    full = fake_messages(make_request(tmp_path, 5.0))[1]["content"][-2]["audio"]
    np.testing.assert_array_equal(wave, full[-2 * SR :])
    assert outs[1].extra["audio_dropped_s"] == 3.0
    assert second["mm_processor_kwargs"] == {
        "max_pixels": 200704,
        "do_sample_frames": False,
        "fps": 1.0,
    }
    assert FakeLLM.instances[-1].kwargs["mm_processor_kwargs"] == {"max_pixels": 200704}
    assert adapter.max_pixels == 200704


def test_real_qwen_omni_processor_accepts_the_engine_input(fake_vllm, tmp_path, av_clip) -> None:
    """With a (tiny) Qwen2.5-Omni processor saved as the checkpoint, the chat template comes from
    the processor, and the processor itself (which vLLM runs on these inputs) accepts the prompt
    and ``multi_modal_data``: one placeholder per item. Preflight's estimate bounds the real
    length from above, within a few tokens per item."""
    pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    pytest.importorskip("transformers")
    from interactscope.streaming.adapters.vllm_backend import VLLMAdapter
    from interactscope.streaming.protocol.observation import Observer
    from tests.helpers.tiny_qwen import PIXELS, tiny_omni

    _, processor = tiny_omni()
    ckpt = tmp_path / "tiny-omni"
    processor.save_pretrained(ckpt)
    settings = Settings()
    adapter = VLLMAdapter(
        "tiny-omni",
        {
            "backend": "vllm",
            "checkpoint": str(ckpt),
            "generation": {"max_new_tokens": 32},
            "token_estimate": {
                "min_pixels": PIXELS["shortest_edge"],
                "max_pixels": PIXELS["longest_edge"],
            },
        },
        settings,
    )
    t = 3.5
    request = make_request(tmp_path, t)
    request.observation = Observer(av_clip, settings, bench_root=av_clip.parent).observe(
        t, request.interaction
    )
    report = adapter.preflight([request])
    assert adapter.describe()["chat_template_source"] == "processor"
    # the audio window comes from the processor's feature extractor (Whisper: n_samples)
    assert adapter._audio_window() == processor.feature_extractor.n_samples

    adapter.respond(request)
    (inp,) = FakeLLM.instances[-1].calls[-1]
    mm = inp["multi_modal_data"]
    assert len(mm["image"]) == 4 and len(mm["audio"]) == 1
    enc = processor(
        text=[inp["prompt"]],
        images=[np.array(im) for im in mm["image"]],  # writable copies for torch
        audio=[w for w, _ in mm["audio"]],
        return_tensors="np",
    )
    ids = enc["input_ids"][0].tolist()
    tok = processor.tokenizer
    n_audio = ids.count(tok.convert_tokens_to_ids("<|AUDIO|>"))
    assert abs(n_audio - t * 25) <= 1  # the audio is in the prompt: 25 tokens per second
    real = len(ids) + 32
    n_items = len(mm["image"]) + len(mm["audio"])
    assert real <= report.worst_tokens <= real + 2 * n_items


def _vllm_configs() -> list[str]:
    from interactscope.streaming.adapters.registry import available_models, load_model_config

    return [n for n in available_models() if load_model_config(n)[1].get("backend") == "vllm"]


@pytest.mark.parametrize("name", _vllm_configs())
def test_shipped_qwen_configs_drive_the_engine(fake_vllm, monkeypatch, tmp_path, name) -> None:
    """The shipped Qwen configs (keys shared with the transformers backend) load through the
    registry and reach the engine: limits, context, engine args, one image item per frame
    (``frames_as: image``; video items with metadata for Qwen3-VL otherwise), every frame count
    from 1 to 32."""
    from interactscope.streaming.adapters.registry import build_adapter, load_model_config
    from interactscope.streaming.settings import apply_overrides

    _, cfg = load_model_config(name)
    settings = Settings(**apply_overrides(Settings().model_dump(), cfg.get("settings") or {}))
    adapter = build_adapter(name, {**cfg, "template": "tokenizer"}, settings)

    def messages(r: DecisionRequest) -> list[dict[str, Any]]:
        msgs = fake_messages(r)
        if settings.audio.mode != "native":  # e.g. Qwen3-VL: speech as transcript text
            msgs[1]["content"] = [p for p in msgs[1]["content"] if p["type"] != "audio"]
        return msgs

    monkeypatch.setattr(adapter, "_messages", messages)
    outs = adapter.respond_batch([make_request(tmp_path, k - 0.5) for k in range(1, 33)])
    assert all(isinstance(o, AdapterOutput) for o in outs), outs
    llm = FakeLLM.instances[-1]
    limits = cfg["limits"]
    assert llm.kwargs["limit_mm_per_prompt"] == limits["limit_mm_per_prompt"]
    assert llm.kwargs["max_model_len"] == limits["max_model_len"]
    for key, value in cfg["vllm"]["engine_args"].items():
        assert llm.kwargs[key] == value
    for k, inp in enumerate(llm.calls[-1], start=1):
        if cfg["frames_as"] == "image":  # the shipped vLLM configs since issue 25
            assert (
                len(inp["multi_modal_data"]["image"]) == k
                and "video" not in inp["multi_modal_data"]
            )
            assert "frames_true" not in outs[k - 1].extra
            continue
        (video,) = inp["multi_modal_data"]["video"]
        if "qwen3-vl" in name:
            video, meta = video
            assert meta["frames_indices"][:k] == list(range(k)) and meta["fps"] == 1.0
            assert len(meta["frames_indices"]) == video.shape[0]
            assert inp["mm_processor_kwargs"]["do_sample_frames"] is False
        assert video.shape[0] == k + k % 2
        assert outs[k - 1].extra["frames_true"] == k


def test_prepare_preflights_every_interaction(fake_vllm, monkeypatch, tmp_path) -> None:
    """``prepare(bench)`` (called by the driver before collection) checks the last decision point
    of every interaction: ``synthetic`` (probe only) agrees with ``decode`` (real observation),
    and a context too small fails before the run with the interaction and t named."""
    from interactscope.streaming.adapters.vllm_backend import VLLMAdapter
    from interactscope.streaming.bench import load_benchmark
    from tests.helpers.foundation_fixtures import interaction, write_bench

    root = write_bench(
        tmp_path / "bench",
        [
            interaction("a", q=1.0),
            interaction(
                "b",
                task="T1",
                q=2.0,
                targets=[{"id": "k1", "time_s": 4.0, "tools": ["take_photo"]}],
            ),
        ],
    )
    bench = load_benchmark(root)
    reports = {}
    for mode in ("synthetic", "decode"):
        adapter = VLLMAdapter(
            "q",
            {
                "backend": "vllm",
                "checkpoint": "Qwen/Qwen2.5-Omni-7B",
                "template": "tokenizer",
                "preflight": {"on_prepare": mode, "reduce_pixels": False},
            },
            Settings(),
        )
        adapter.prepare(bench)
        reports[mode] = adapter.describe()["preflight"]
        assert reports[mode]["checked"] == 2 and not reports[mode]["reduced"]
    syn, dec = reports["synthetic"]["worst_tokens"], reports["decode"]["worst_tokens"]
    assert abs(syn - dec) <= 0.02 * dec, (syn, dec)

    tight = VLLMAdapter(
        "q",
        {
            "backend": "vllm",
            "checkpoint": "Qwen/Qwen2.5-Omni-7B",
            "template": "tokenizer",
            "max_model_len": 1500,
            "preflight": {"reduce_pixels": False},
        },
        Settings(),
    )
    with pytest.raises(AdapterError, match=r"interaction [ab] t=7\.\d+s.*max_model_len=1500"):
        tight.prepare(bench)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_video_label_sits_where_the_prompt_layout_puts_it(fake_vllm, tmp_path, version) -> None:
    """``frames_as: video``: with v2 (prefix layout) the video item comes right after the stream
    header and its label after it, so the prompts at t = 2 and t = 3 share everything up to the
    video; v1 keeps the adapter's own label before the video, as its runs recorded it."""
    from interactscope.streaming.adapters.vllm_backend import VLLMAdapter
    from tests.test_prompt_layout import _obs

    settings = Settings(prompt_version=version)
    config = {"backend": "vllm", "checkpoint": "Qwen/Qwen2.5-Omni-7B", "template": "tokenizer"}
    adapter = VLLMAdapter("qwen-test", {**config, "frames_as": "video"}, settings)
    prompts = []
    for t in (2.0, 3.0):
        req = make_request(tmp_path, t)
        req.settings, req.observation = settings, _obs(t)
        prompts.append(adapter.build(req).prompt)
    head, tail = prompts[0].split("<|VIDEO|>")
    if version == "v2":
        assert head.endswith(
            "The stream so far, in time order (one frame per second):<|vision_bos|>"
        )
        assert tail.startswith("<|vision_eos|>[the video above: 3 frames, at 0.0 s, 1.0 s, 2.0 s]")
        assert prompts[1].startswith(head + "<|VIDEO|>")  # the shared prefix reaches the video
    else:
        assert head.endswith("[frame at 0.0 s](video of 3 frames at 0 s, 1 s, 2 s)<|vision_bos|>")
    assert "(video of" not in tail

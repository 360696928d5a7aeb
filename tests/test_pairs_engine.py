"""``frames_as: video_pairs`` through the transformers engine (issue 29): the processor gets
the stream frames as 2-frame videos whose pixels are the one video's own temporal patches, the
frame cache and a batch give the same inputs, and each item's rope positions start anew after
its label (Qwen2.5-Omni ``get_rope_index``)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from interactscope.engines.base import Message, TextPart  # noqa: E402
from interactscope.media import Frame  # noqa: E402
from interactscope.streaming.protocol.observation import Observation  # noqa: E402
from interactscope.streaming.protocol.prompts import build_messages  # noqa: E402
from interactscope.streaming.settings import Settings  # noqa: E402
from tests.helpers.tiny_qwen import tiny_omni  # noqa: E402
from tests.helpers.transformers_adapter import _request  # noqa: E402

PAIRS = "video_pairs"


@pytest.fixture(scope="module")
def omni():
    return tiny_omni()


def _engine(omni, **opts):
    from interactscope.engines.qwen_mm import QwenEngine
    from interactscope.engines.qwen_options import QwenOptions

    model, proc = omni
    o = {"generation": {"max_new_tokens": 4, "temperature": 0.0},
         "processor_kwargs": {"min_pixels": 56 * 56, "max_pixels": 112 * 112}, **opts}  # fmt: skip
    eng = QwenEngine(QwenOptions.model_validate(o), "t", model=model, processor=proc)
    eng.load()
    return eng


def _obs(t: float) -> Observation:
    """Frames 0..floor(t) of 56x56 px, each its own colour; no audio."""
    frames = [Frame(k, float(k), np.full((56, 56, 3), (40 * k, 255 - 30 * k, 7 * k), np.uint8))
              for k in range(int(t) + 1)]  # fmt: skip
    return Observation(t=t, frames=frames, n_frames_available=len(frames), has_audio=False)


NONE = Settings(audio={"mode": "none"})


def _msgs(t: float, frames_as: str = PAIRS):
    return build_messages(_request(t, _obs(t), NONE), frames_as=frames_as)


@pytest.mark.parametrize("cache_mb", [0, 256])
def test_pairs_send_the_one_videos_temporal_patches(omni, cache_mb):
    """t = 4: frames 0..4 as items (0, 1), (2, 3), (4, 4 repeated); the one video is 0..4 and
    4 repeated. 56x56 px at patch 14: a 4x4 grid per temporal patch, 16 rows of 3*2*14*14 =
    1176 values each; the pairs' 3 items are the video's 3 temporal patches, row for row."""
    import torch

    eng = _engine(omni, frames_as=PAIRS, frame_cache_mb=cache_mb)
    pairs = eng.process(eng.render(_msgs(4.0)))
    whole = _engine(omni, frames_as="video", frame_cache_mb=0)
    video = whole.process(whole.render(_msgs(4.0, "video")))
    assert pairs["video_grid_thw"].tolist() == [[1, 4, 4]] * 3
    assert video["video_grid_thw"].tolist() == [[3, 4, 4]]
    assert pairs["pixel_values_videos"].shape == (48, 1176)
    assert torch.equal(pairs["pixel_values_videos"], video["pixel_values_videos"])


def test_pairs_rope_positions_restart_per_item(omni):
    """Qwen2.5-Omni ``get_rope_index``: a video item's temporal index is its start position +
    k * second_per_grid * 25 for its k-th temporal patch. One video of 3 patches at 1 fps: k *
    2 s * 25 = 0, 50, 100 over its tokens; the pairs' items have one patch each, so every token
    of an item has the same temporal index, the position after its label (as an image's)."""
    from interactscope.engines.qwen_session import rope_index_fn

    def temporal(eng, msgs):
        inputs = eng.process(eng.render(msgs))
        ids = inputs["input_ids"]
        pos, _ = rope_index_fn(eng.generator)(
            input_ids=ids, image_grid_thw=None, video_grid_thw=inputs["video_grid_thw"],
            attention_mask=inputs["attention_mask"],
            second_per_grids=inputs["video_second_per_grid"],
        )  # fmt: skip
        vid = eng.generator.config.video_token_id
        mask = ids[0] == vid
        return pos[0, 0][mask].tolist(), pos[1, 0][mask].tolist()

    t_pairs, h_pairs = temporal(_engine(omni, frames_as=PAIRS), _msgs(4.0))
    t_video, h_video = temporal(_engine(omni, frames_as="video"), _msgs(4.0, "video"))
    # 16 patches of 14 px merged 2x2: 4 tokens per temporal patch, 12 in all
    assert len(t_pairs) == len(t_video) == 12
    starts = [t_pairs[0], t_pairs[4], t_pairs[8]]
    assert t_pairs == [s for s in starts for _ in range(4)]
    assert starts[0] < starts[1] < starts[2]  # each after the previous item and its label
    assert [x - t_video[0] for x in t_video] == [d for d in (0, 50, 100) for _ in range(4)]
    assert [h - s for h, s in zip(h_pairs, t_pairs, strict=True)] == [0, 0, 1, 1] * 3


def test_a_batch_of_pairs_prompts_equals_single_prompts(omni):
    """Lazy pieces joined by collate_left equal the eager rows; the batched greedy answers equal
    the single ones."""
    import torch

    from interactscope.engines.qwen_mm import collate_left

    eng = _engine(omni, frames_as=PAIRS)
    convs = [_msgs(float(t)) for t in (1, 2, 3, 4)]
    pad = eng._pad_id()
    eager = collate_left([eng.process(eng.render(c)) for c in convs], pad)
    lazy_rows = [eng.process(eng.render(c), lazy=True) for c in convs]
    lazy = collate_left(lazy_rows, pad, eng.frame_cache.pieces_of, "cpu")
    eng.frame_cache.release()
    assert sorted(lazy) == sorted(eager)
    for k, v in eager.items():
        assert torch.equal(lazy[k], v), k
    single = [eng.chat(c).text for c in convs]
    assert [b.text for b in eng.chat_batch(convs)] == single


def test_a_stream_frame_in_image_form_goes_as_a_one_frame_video(omni):
    from interactscope.engines.base import ImagePart

    eng = _engine(omni, frames_as=PAIRS)
    img = np.zeros((56, 56, 3), np.uint8)
    r = eng.render([Message(role="user", content=[ImagePart(image=img, pts_s=3.0),
                                                 TextPart(text="x")])])  # fmt: skip
    assert (len(r.videos), len(r.images), r.n_frames_sent) == (1, 0, 2)


def test_qwen3_vl_metadata_is_per_item():
    """Qwen3-VL writes each temporal patch's time from the video's metadata: each pair item
    gets its own frames' seconds (pts 2, 3 -> indices [2, 3]; the lone 4 padded -> [4, 4])."""
    from interactscope.engines.qwen_mm import QwenEngine
    from interactscope.engines.qwen_options import QwenOptions
    from tests.helpers.tiny_qwen import tiny_qwen3_vl

    model, proc = tiny_qwen3_vl()
    eng = QwenEngine(QwenOptions(frames_as=PAIRS), "t", model=model, processor=proc)
    eng.load()
    r = eng.render(_msgs(4.0))
    meta = eng._videos_kwargs(r)["video_metadata"]
    assert [m.frames_indices for m in meta] == [[0, 1], [2, 3], [4, 4]]
    assert [m.total_num_frames for m in meta] == [2, 2, 2]
    text = proc.tokenizer.decode(eng.process(r)["input_ids"][0])
    assert all(f"<{x} seconds>" in text for x in ("0.5", "2.5", "4.0"))


def test_items_of_different_frame_rates_take_one_fps(omni):
    """Past the cap the picks are spread (stride): items (0, 4) and (8, 9) have 0.25 and 1 Hz.
    The Omni processor takes one ``fps`` (a list is refused); for one-patch items it does not
    enter the positions, so the first item's is sent (second_per_grid 2 / 0.25 = 8 s)."""
    eng = _engine(omni, frames_as=PAIRS)
    obs = _obs(9.0)
    obs = Observation(t=9.0, frames=[obs.frames[k] for k in (0, 4, 8, 9)], n_frames_available=10,
                      has_audio=False)  # fmt: skip
    r = eng.render(build_messages(_request(9.0, obs, NONE), frames_as=PAIRS))
    assert r.video_fps == [0.25, 1.0]
    out = eng.process(r)
    assert out["video_grid_thw"].tolist() == [[1, 4, 4]] * 2
    assert out["video_second_per_grid"].tolist() == [8.0, 8.0]


def test_pairs_visual_tokens_are_the_one_videos(omni):
    """The vision encoder attends within each temporal patch (``get_vision_cu_seqlens``,
    ``merge_temporal=False``), so the items' 3 x 4 merged tokens equal the one video's."""
    import torch

    a_eng, b_eng = _engine(omni, frames_as=PAIRS), _engine(omni, frames_as="video")
    a = a_eng.process(a_eng.render(_msgs(4.0)))
    b = b_eng.process(b_eng.render(_msgs(4.0, "video")))
    gen = a_eng.generator
    visual = getattr(gen, "visual", None) or gen.model.visual
    with torch.no_grad():
        ea = visual(a["pixel_values_videos"], grid_thw=a["video_grid_thw"]).pooler_output
        eb = visual(b["pixel_values_videos"], grid_thw=b["video_grid_thw"]).pooler_output
    assert ea.shape[0] == 12 and torch.equal(ea, eb)


@pytest.mark.slow
def test_pairs_share_the_prefix_within_the_cap_on_the_3b_engine():
    """``bench_prefix.measure_config`` (qwen2.5-omni-3b's engine and budget over the tiny Omni
    model, media placeholders keyed by their item's bytes): t = 1..32, all within the cap. The
    one video shares nothing from its first placeholder on; the pairs keep every earlier item,
    >= 0.9 of the shorter prompt on average (docs/protocol.md: 90 %), over 3x the video's."""
    from benchmarks.bench_prefix import measure_config

    v3 = {"prompt_version": "v3", "audio.segment_s": 8}
    pairs = measure_config("qwen2.5-omni-3b", 31, "stride", v3, frames_as=PAIRS)
    video = measure_config("qwen2.5-omni-3b", 31, "stride", v3, frames_as="video")
    assert pairs["frames_as"] == PAIRS and pairs["beyond"] != pairs["beyond"]  # none past it
    assert pairs["within"] >= 0.9 and pairs["within"] > 3 * video["within"]
    assert pairs["tokens"] < 1.05 * video["tokens"]  # about one video's tokens (+ labels)


def test_vllm_default_limit_takes_every_item():
    """ceil(frames.max / 2) 2-frame videos (32 frames: 16; 5: 3), 4 image attachments."""
    from interactscope.engines.qwen_options import QwenOptions
    from interactscope.engines.vllm_engine import VLLMEngine

    limits = VLLMEngine._limits
    assert limits(QwenOptions(), PAIRS, 32) == {"image": 4, "video": 16, "audio": 2}
    assert limits(QwenOptions(), PAIRS, 5)["video"] == 3
    assert limits(QwenOptions(), "video", 32) == {"image": 4, "video": 1, "audio": 2}

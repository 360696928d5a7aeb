"""Tiny random-weight checkpoints of the streaming models' architectures, built from configs
(no download), and a way to script what they generate.

- :func:`tiny_livecc`: a Qwen2-VL (LiveCC's architecture) with a processor whose chat template
  renders like Qwen2-VL-7B-Instruct's (default system prompt, ``<|vision_start|><|video_pad|>
  <|vision_end|>``, text parts with nothing between them).
- :func:`tiny_mmduet2`: a Qwen2.5-VL (MMDuet2's), the same kind of template.
- :func:`tiny_live_llama`: VideoLLM-online's architecture from transformers classes: a Llama
  causal LM, a SigLIP vision tower and the 2-layer GELU connector, with a tokenizer carrying
  the ``<v>`` frame placeholder and the ``,`` frame-interval token.
- :func:`script_replies`: a forward hook that overrides the last-position logits so a random
  model generates a chosen token sequence (the tokens the adapters then feed follow from it).
"""

from __future__ import annotations

from functools import lru_cache

from tests.helpers import tiny_qwen
from tests.helpers.tiny_qwen import VL_SPECIAL

QWEN2_VL_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

STREAM_WORDS = [
    "Time=0.0-3.0s Time=3.0-4.0s Time=4.0-5.0s Time=5.0-6.0s You are a helpful assistant.",
    " ... NO REPLY A person walks in. Tell me when the door opens.",
    "A multimodal AI assistant is helping users with some activities. Below is their "
    "conversation, interleaved with the list of video frames received by the assistant.",
    "\nUser: \nAssistant: ]\n [ , Your task is to answer questions based on continuously "
    "incoming video frames.",
]


def _tokenizer(special: dict[str, str], template: str, extra_tokens: tuple[str, ...] = ()):
    """:func:`tests.helpers.tiny_qwen._tokenizer` also trained on the streaming models' words."""
    return tiny_qwen._tokenizer(special, template, extra_tokens, tuple(STREAM_WORDS * 5))


def _vl(config_cls, model_cls, processor_cls, vision: dict, seed: int):
    """(model, processor) of a tiny Qwen-VL ``config_cls`` with the Qwen2-VL-style template."""
    tok = _tokenizer(VL_SPECIAL, QWEN2_VL_TEMPLATE)
    ids = {k: tok.convert_tokens_to_ids(v) for k, v in VL_SPECIAL.items()}
    processor = tiny_qwen.processor_of(processor_cls, tok, QWEN2_VL_TEMPLATE)
    cfg = config_cls(
        vision_config=vision,
        text_config=tiny_qwen.text_config(len(tok)),
        **tiny_qwen.vision_ids(ids),
    )
    return tiny_qwen.finish(model_cls, cfg, ids, seed), processor


@lru_cache(maxsize=1)
def tiny_livecc(seed: int = 0):
    """(model, processor) of a tiny Qwen2-VL; eval, float32, CPU."""
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor

    vision = dict(depth=1, embed_dim=32, hidden_size=64, mlp_ratio=2, num_heads=2)
    return _vl(Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor, vision, seed)


@lru_cache(maxsize=1)
def tiny_mmduet2(seed: int = 0):
    """(model, processor) of a tiny Qwen2.5-VL with the Qwen2-VL-style template."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
    )

    classes = (Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor)
    return _vl(*classes, dict(tiny_qwen.VL25_VISION), seed)


LIVE_SPECIAL = {"pad": "<|eot_id|>", "eos": "<|eot_id|>", "bos": "<|begin_of_text|>"}


@lru_cache(maxsize=1)
def tiny_live_llama(seed: int = 0):
    """VideoLLM-online's parts, tiny: ``(llm, vision, connector, tokenizer)``; the SigLIP tower
    takes 32x32 frames in 16 px patches (2x2 = 4 patch tokens, pooled to 1x1 + CLS = 2 frame
    tokens when used with ``frame_token_pooled: [1, 1]``)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, SiglipVisionConfig, SiglipVisionModel

    tok = _tokenizer(LIVE_SPECIAL, "", extra_tokens=("<v>",))
    llm_cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    vis_cfg = SiglipVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=32,
        patch_size=16,
    )
    torch.manual_seed(seed)
    llm = LlamaForCausalLM(llm_cfg).eval()
    vision = SiglipVisionModel(vis_cfg).eval()
    connector = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 64)
    ).eval()
    return llm, vision, connector, tok


def script_replies(model, script: list[list[int]]):
    """Make ``model`` (a causal LM) generate ``script[i]`` at its i-th reply: each forward pass's
    last-position logits are replaced by a one-hot on the next scripted token. A forward pass
    that is a reply's prompt (more than one input position, or the first after a reply ended)
    starts the next reply. Returns the hook handle (``.remove()`` it)."""
    import torch

    state = {"reply": -1, "pos": 0, "done": True}

    def hook(module, args, kwargs, output):
        if state["done"]:
            state["reply"] += 1
            state["pos"] = 0
            state["done"] = False
        seq = script[min(state["reply"], len(script) - 1)]
        tok = seq[min(state["pos"], len(seq) - 1)]
        logits = torch.full_like(output.logits[:, -1], -1e4)
        logits[:, tok] = 1e4
        output.logits[:, -1] = logits
        state["pos"] += 1
        if state["pos"] >= len(seq):
            state["done"] = True
        return output

    return model.register_forward_hook(hook, with_kwargs=True)

"""A stand-in for vLLM's LLM and SamplingParams (records the prompts it is given)."""

from __future__ import annotations

from typing import Any

IMAGE = "<|vision_bos|><|IMAGE|><|vision_eos|>"


VIDEO = "<|vision_bos|><|VIDEO|><|vision_eos|>"


AUDIO = "<|audio_bos|><|AUDIO|><|audio_eos|>"


class FakeTokenizer:
    """Renders chat messages like Qwen2.5-Omni's template; one token per whitespace word."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        assert tokenize is False
        out = []
        for m in messages:
            c = m["content"]
            if isinstance(c, str):
                body = c
            else:
                body = "".join(
                    {"image": IMAGE, "video": VIDEO, "audio": AUDIO}.get(p["type"], "")
                    if p["type"] != "text"
                    else p["text"]
                    for p in c
                )
                for p in c:  # the adapter must strip the arrays from template messages
                    assert set(p) <= {"type", "text"}, p
            out.append(f"<|im_start|>{m['role']}\n{body}<|im_end|>\n")
        if add_generation_prompt:
            out.append("<|im_start|>assistant\n")
        return "".join(out)

    def encode(self, text, add_special_tokens=True):
        return text.split()


class FakeCompletion:
    def __init__(self, text: str):
        self.text = text
        self.token_ids = [7] * len(text.split())
        self.finish_reason = "stop"


class FakeRequestOutput:
    def __init__(self, prompt: str, text: str):
        self.prompt_token_ids = list(range(len(prompt.split())))
        self.outputs = [FakeCompletion(text)]


class FakeSamplingParams:
    def __init__(self, **kwargs: Any):
        self.kwargs = kwargs


class FakeLLM:
    instances: list[FakeLLM] = []

    def __init__(self, **kwargs: Any):
        self.kwargs = kwargs
        self.calls: list[list[dict]] = []
        self.sampling: list[FakeSamplingParams] = []
        self.fail_if = None  # callable(input) -> bool: raise when any input matches
        self.reply = lambda inp: "<SILENT>"
        FakeLLM.instances.append(self)

    def get_tokenizer(self):
        return FakeTokenizer()

    def generate(self, inputs, sampling_params=None, use_tqdm=True):
        inputs = list(inputs)
        self.calls.append(inputs)
        self.sampling.append(sampling_params)
        if self.fail_if is not None and any(self.fail_if(i) for i in inputs):
            raise RuntimeError("CUDA error: an illegal memory access was encountered (fake)")
        return [FakeRequestOutput(i["prompt"], self.reply(i)) for i in inputs]

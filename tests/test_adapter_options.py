"""The one options mechanism of the streaming adapters (``adapters.base.ConfiguredAdapter``,
``LocalEngineAdapter.make_engine``) and the one list of the chat interface's names
(``engines.base.__all__``, re-exported by ``interactscope.engines``)."""

from __future__ import annotations

from typing import Any

import pytest

import interactscope.engines as engines
from interactscope.engines import base
from interactscope.engines.config import BackendOptions
from interactscope.streaming.adapters.base import (
    AdapterError,
    ConfiguredAdapter,
    LocalEngineAdapter,
)
from interactscope.streaming.settings import Settings


class EchoOptions(BackendOptions):
    prefix: str = ""
    repeat: int = 1


class EchoAdapter(ConfiguredAdapter):
    backend = "echo-test"
    options_class = EchoOptions


class FakeEngine:
    max_new_tokens = 7

    def __init__(self, options: EchoOptions, name: str, model: Any = None):
        self.options, self.name, self.model = options, name, model


class EchoLocal(LocalEngineAdapter):
    backend = "echo-local-test"
    options_class = EchoOptions

    def make_engine(self, *, model: Any = None) -> FakeEngine:
        return FakeEngine(self.options, self.name, model)


def test_options_are_the_config_and_its_groups_under_the_run_overrides():
    cfg = {"backend": "echo-test", "prefix": "> ", "limits": {"repeat": 2}}
    assert EchoAdapter("echo", cfg, Settings()).options == EchoOptions(prefix="> ", repeat=2)
    ad = EchoAdapter("echo", cfg, Settings(adapter={"repeat": 3}))
    assert ad.options == EchoOptions(prefix="> ", repeat=3)


def test_an_unknown_option_is_refused_at_construction_naming_it_and_the_valid_ones():
    with pytest.raises(AdapterError) as err:
        EchoAdapter("echo", {"backend": "echo-test", "prefx": "> "}, Settings())
    msg = str(err.value)
    assert "'echo'" in msg and "prefx" in msg and "prefix" in msg and "\n" not in msg


def test_a_local_engine_adapter_builds_its_engine_from_the_parsed_options():
    cfg = {"repeat": 4, "generation": {"temperature": 0.5}}
    ad = EchoLocal("local", cfg, Settings(), model="M")
    assert ad.engine.options.repeat == 4 and ad.engine.name == "local"
    assert (ad.model, ad.max_new_tokens, ad.temperature) == ("M", 7, 0.5)
    with pytest.raises(TypeError):  # make_engine's keywords only
        EchoLocal("local", cfg, Settings(), tokenizer="T")


def test_the_engines_package_exports_every_name_of_the_chat_interface():
    assert set(base.__all__) <= set(engines.__all__)
    assert all(getattr(engines, n) is getattr(base, n) for n in base.__all__)
    assert {"ENGINES", "engine_class", "load_engine"} <= set(engines.__all__)


def test_a_plain_adapter_refuses_options_it_does_not_take(monkeypatch):
    """A plug-in backend that subclasses plain ``Adapter`` takes no options: a typo in its
    model config or an ``--set adapter.KEY`` is the same one line as a ConfiguredAdapter's."""
    from interactscope.core import registry
    from interactscope.streaming.adapters.base import Adapter
    from interactscope.streaming.adapters.registry import build_adapter

    class Plain(Adapter):
        backend = "plain"

    class Free(Adapter):
        backend = "free"
        free_options = True

    monkeypatch.setitem(registry.table("backends"), "plain", Plain)
    with pytest.raises(AdapterError) as exc:
        build_adapter("p", {"backend": "plain", "temprature": 0.2}, Settings())
    assert str(exc.value) == (
        "model 'p' (backend plain): unknown option 'temprature' (config or --set "
        "adapter.temprature); valid options: (none)"
    )
    with pytest.raises(AdapterError, match=r"unknown option 'seed' \(config or --set adapter"):
        Plain("p", {"backend": "plain"}, Settings(adapter={"seed": 1}))
    # meta keys and the driver's adapter settings are not backend options
    meta = {"backend": "plain", "notes": "n", "settings": {}, "batch_size": 2}
    assert Plain("p", meta, Settings(adapter={"batch_max_mb": 64})).config == meta
    assert Free("f", {"backend": "free", "script": [1]}, Settings()).config["script"] == [1]
    assert (Plain.options_model().__name__, Free.options_model()) == ("NoOptions", None)
    assert EchoAdapter.options_model() is EchoOptions

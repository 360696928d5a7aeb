"""An adapter that speaks at every decision point (backend 'talkative')."""

from __future__ import annotations

from interactscope.streaming.adapters.base import Adapter, AdapterOutput, Session


class Talkative(Adapter):
    """Speaks at every decision point; says how much history it was shown; fails at t = 2."""

    backend = "talkative"
    free_options = True  # reads fail_at from its config
    needs_media = False
    supports_online = True

    def respond(self, request):
        if self.config.get("fail_at") == request.t:
            raise ConnectionError("server hung up")
        return AdapterOutput(text=f"history={len(request.history)}")

    def open_session(self, interaction, video):
        adapter = self

        class S(Session):
            seen: list[float] = []

            def step(self, request):
                self.seen.append(request.t)
                return adapter.respond(request)

        return S()

"""``--agent egointeract:SERVICE[,AUDITOR][,key=value...]``: resolve both models into engines
(one engine when they are the same model) and build the policy; both models and every setting
are recorded in ``run.json``."""

from __future__ import annotations

from interactscope.egobench.chat_models import load_chat_engine
from interactscope.egobench.egointeract.config import parse_spec
from interactscope.egobench.egointeract.policy import EgoInteractAgent
from interactscope.egobench.egointeract.texts import load_texts


def build_egointeract(spec: str) -> EgoInteractAgent:
    """The policy ``spec`` names.

    Raises:
        ValueError (ChatModelError, PromptError): a bad spec, a model that cannot chat, or a
            missing prompt file; one line."""
    s = parse_spec(spec)
    load_texts("service", s.prompt_version)
    load_texts("auditor", s.prompt_version)
    service, sinfo = load_chat_engine(s.service_model, "--agent egointeract (service)")
    if s.auditor_name == s.service_model:
        auditor, ainfo = service, sinfo
    else:
        auditor, ainfo = load_chat_engine(s.auditor_name, "--agent egointeract (auditor)")
    info = {
        "sha256": sinfo.sha256,
        "service": sinfo.model_dump(),
        "auditor": ainfo.model_dump() if s.auditor else None,
    }
    return EgoInteractAgent(s, service, auditor, sees_pixels=sinfo.sees_pixels, info=info)

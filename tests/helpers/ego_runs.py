"""Hand-made EgoBench run folders (ground truth replayed on the first N tasks)."""

from __future__ import annotations

from interactscope.egobench import package_data_dir
from interactscope.egobench.data import load_variant
from interactscope.egobench.records import CallRecord, EpisodeRecord, ToolResult
from interactscope.egobench.run_folder import fingerprint, new_manifest, open_episodes

TASKS = list(range(1, 9))


SOLVED = {"full": 7, "no_auditor": 6, "no_rules": 4, "neither": 3}
"""Each hand-made run replays the ground truth of its first N tasks and calls nothing on the rest."""


def make_run(path, label: str, solved: int, tasks=TASKS):
    v = load_variant(package_data_dir(), "retail1")
    manifest = new_manifest(
        agent={"name": f"egointeract:fake,{label}", "kind": "egointeract", "label": label},
        user={"name": "scripted"},
        agent_id=f"egointeract:{label}",
        user_id="scripted",
        mode="easy",
        data={"path": str(package_data_dir()), "variants": {"retail1": fingerprint(v)}},
        tasks={"retail1": list(tasks)},
        settings={},
    )
    writer = open_episodes(path, manifest)
    for tid in tasks:
        rec = EpisodeRecord(variant="retail1", task_id=tid, stop_reason="user_stop")
        if tid <= solved:
            rec.calls = [
                CallRecord(turn=1, call=c, result=ToolResult(ok=True, name=c.name))
                for c in v.task(tid).ground_truth
            ]
        writer.append(rec)
    writer.finish()
    return path

"""Process each frame once: a cache of the Qwen vision processors' outputs per frame.

Consecutive decision points share all but their newest frames, yet the Hugging Face processor
resizes and normalises every frame again at each call. :class:`FrameCache` sits in front of the
processor's ``image_processor`` and ``video_processor`` for the duration of one processor call
(:meth:`FrameCache.installed`) and answers them piece by piece:

- an image (``Qwen2VLImageProcessor``): its ``pixel_values`` rows and ``image_grid_thw`` row;
- a video (``Qwen2VLVideoProcessor``): each frame is resized, rescaled and normalised once, new
  frames of one size ``temporal_patch_size`` at a time as one video taken apart on its temporal
  axis, a last one alone as a one-frame video (the processor pads it to a temporal patch by
  repeating it; the first of the copies is kept): ``(h*w patches, channels, patch_size**2)``. A temporal patch
  (``temporal_patch_size`` consecutive frames, 2 for Qwen) is those frames' patches stacked on
  the temporal axis of the processor's patch layout (``channel, temporal, patch, patch``): a
  :class:`TemporalPatch`, which holds its frames and writes the stacked rows straight into the
  tensor that needs them (:func:`join_pieces`: the call's pixel tensor, or with ``lazy`` a
  batch's), so no patch tensor is built on the way (a strided write runs at the speed of the
  copy it replaces). The video's ``pixel_values_videos`` are its temporal patches concatenated
  in time order and its ``video_grid_thw`` is ``[sum of the pieces' t, h, w]``. This equals
  processing the whole video because resizing, rescaling and normalising act on each frame
  alone and the patch layout is time-major; past the frame cap, where the uniform picks shift
  at every decision point and so pair frames differently, a new pair costs nothing but its
  write.

A piece is keyed by the call's keyword arguments (``fps`` left out: frames are never sampled)
and a digest of its frames' bytes, shape and dtype. An array seen before is recognised by
identity without hashing again, so frames must not be modified in place (the media layer's are
read-only). The store is locked: threads may share one cache. Calls the cache cannot reproduce
exactly go to the processor unchanged: another processor class, ``return_metadata`` (Qwen2.5-VL / Qwen3-VL video metadata),
``cap_pixels_per_frame`` (the pixel budget then depends on the frame count), frame sampling, a
frame count not a multiple of the temporal patch, frames of different sizes, or outputs with
other keys. Entries (processed frames and images) are evicted least recently used beyond
``max_bytes``; temporal patches are not stored (they are their frames).
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["FrameCache", "TemporalPatch", "join_pieces"]

_IMAGE_KEYS = {"pixel_values", "image_grid_thw"}
_VIDEO_KEYS = {"pixel_values_videos", "video_grid_thw"}


class FrameCache:
    """Processed frames keyed by content (see the module docstring).

    Args:
        max_bytes: bound on the cached tensors' bytes (least recently used frames and images
            evicted first); 0 keeps nothing.

    Attributes:
        hits, misses: frames sent that were not processed again (answered from the cache) /
            frames the processor processed, since creation.
    """

    def __init__(self, max_bytes: int = 256 << 20):
        self.max_bytes = int(max_bytes)
        self.hits = 0
        self.misses = 0
        self._store: OrderedDict[tuple, tuple[Any, Any]] = OrderedDict()  # frames, images
        self._bytes = 0
        self._ids: dict[int, tuple[weakref.ref, str]] = {}
        self._lock = threading.Lock()
        self._lazy = threading.local()
        self._placeholders: dict[int, tuple[Any, list[Any]]] = {}

    # -------------------------------------------------------------------- installing
    @contextmanager
    def installed(self, processor: Any, *, lazy: bool = False) -> Iterator[None]:
        """Route ``processor``'s image and video processors through the cache while inside.

        ``lazy``: the pixel tensor of an assembled call is a zero-stride placeholder of the right
        shape, and its pieces (image rows, :class:`TemporalPatch`) wait in :meth:`pieces_of`
        until a batch joins them (each written once, straight into the batch tensor, instead of
        a patch copy, a row copy and then a batch copy); :meth:`release` forgets them. The
        processor only reads the grids, never the pixels."""
        prev = getattr(self._lazy, "on", False)
        self._lazy.on = lazy
        saved = {}
        for attr, kind in (("image_processor", "image"), ("video_processor", "video")):
            inner = getattr(processor, attr, None)
            if inner is not None and not isinstance(inner, _Proxy):
                saved[attr] = inner
                setattr(processor, attr, _Proxy(self, inner, kind))
        try:
            yield
        finally:
            self._lazy.on = prev
            for attr, inner in saved.items():
                setattr(processor, attr, inner)

    def pieces_of(self, tensor: Any) -> list[Any] | None:
        """The cached pieces (in order) a lazy placeholder stands for; None for a real tensor."""
        ent = self._placeholders.get(id(tensor))
        return ent[1] if ent is not None and ent[0] is tensor else None

    def release(self) -> None:
        """Forget every lazy placeholder (after its batch ran)."""
        self._placeholders.clear()

    # -------------------------------------------------------------------- keys
    def _digest(self, a: np.ndarray) -> str:
        ent = self._ids.get(id(a))
        if ent is not None and ent[0]() is a:
            return ent[1]
        c = np.ascontiguousarray(a)
        h = hashlib.blake2b(c.data, digest_size=16)
        h.update(f"{c.shape}{c.dtype}".encode())
        d = h.hexdigest()
        try:
            ref = weakref.ref(a, lambda _r, k=id(a): self._ids.pop(k, None))
        except TypeError:  # not weak-referenceable: hash again next time
            return d
        self._ids[id(a)] = (ref, d)
        return d

    # -------------------------------------------------------------------- store
    def _get(self, key: tuple) -> tuple[Any, Any] | None:
        with self._lock:
            hit = self._store.get(key)
            if hit is not None:
                self._store.move_to_end(key)
            return hit

    def _put(self, key: tuple, value: tuple[Any, Any]) -> None:
        """Store ``value``; beyond ``max_bytes`` the least recently used entries go."""
        size = _nbytes(value[0])
        with self._lock:
            if size > self.max_bytes or key in self._store:
                return
            self._store[key] = value
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (old, _) = self._store.popitem(last=False)
                self._bytes -= _nbytes(old)

    def piece(self, inner: Any, frames: Sequence[np.ndarray], kw: dict) -> tuple:
        """(pixel rows, grid row (1, 3)) of one image, processed at most once.

        Raises:
            _Uncacheable: the processor's output has keys the cache cannot assemble.
        """
        key = ("image", _sig(kw), *(self._digest(f) for f in frames))
        hit = self._get(key)
        if hit is not None:
            self.hits += len(frames)
            return hit
        out = inner([frames[0]], **kw)
        if set(out.keys()) != _IMAGE_KEYS:
            raise _Uncacheable(sorted(out.keys()))
        pix, grid = out["pixel_values"], out["image_grid_thw"]
        self.misses += len(frames)
        self._put(key, (pix, grid))
        return pix, grid

    def video_pieces(self, inner: Any, pieces: Sequence[Sequence[np.ndarray]], kw: dict) -> list:
        """(:class:`TemporalPatch` of ``(t*h*w, C*tps*p*p)`` rows, grid row ``(1, 3)``) per
        temporal patch of ``pieces`` (each ``tps`` frames), from its frames' cached patches; the
        frames never seen are processed in one processor call.

        Raises:
            _Uncacheable: the processor's output is not the Qwen patch layout, or a temporal
                patch's frames differ in size.
        """
        sig = _sig(kw)
        digests = [[self._digest(f) for f in p] for p in pieces]
        have: dict[str, tuple[Any, Any]] = {}
        new: dict[str, np.ndarray] = {}
        for p, ds in zip(pieces, digests, strict=True):
            for f, d in zip(p, ds, strict=True):
                if d not in have and d not in new:
                    got = self._get(("frame", sig, d))
                    have.update({d: got} if got is not None else {})
                    new.update({} if got is not None else {d: f})
        have.update(self._frames(inner, new, sig, kw))
        out = []
        for ds in digests:
            parts = [have[d] for d in ds]
            if len({tuple(g[0].tolist()) for _, g in parts}) != 1:
                raise _Uncacheable("frames of different sizes in one temporal patch")
            out.append((TemporalPatch([r for r, _ in parts]), parts[0][1]))
        self.misses += len(new)
        self.hits += sum(len(p) for p in pieces) - len(new)
        return out

    def _frames(self, inner: Any, frames: dict[str, np.ndarray], sig: str, kw: dict) -> dict:
        """Per digest, the frame's patches ``(h*w, C, p*p)`` and grid row ``(1, 3)``, t = 1,
        all in one processor call; stored under ``("frame", ...)``. Frames of one size go
        ``tps`` at a time as one temporal patch (one video) and are taken apart on its temporal
        axis; a last one alone is a one-frame video (padded by the processor with copies of it:
        the first copy kept). Resizing, rescaling and normalising act on each frame alone, so
        the rows are those of processing each frame alone, without patching the copies."""
        if not frames:
            return {}
        tps = int(kw.get("temporal_patch_size") or inner.temporal_patch_size)
        pp = int(kw.get("patch_size") or inner.patch_size) ** 2
        by_size: dict[tuple, list[str]] = {}
        for d, f in frames.items():
            by_size.setdefault(f.shape, []).append(d)
        groups = [ds[i : i + tps] for ds in by_size.values() for i in range(0, len(ds), tps)]
        res = inner([[frames[d] for d in g] for g in groups], **kw)
        if set(res.keys()) != _VIDEO_KEYS:
            raise _Uncacheable(sorted(res.keys()))
        pix, grids = res["pixel_values_videos"], res["video_grid_thw"]
        if pix.ndim != 2 or pix.shape[1] % (tps * pp) or len(grids) != len(groups):
            raise _Uncacheable("not the Qwen patch layout")
        if (grids[:, 0] != 1).any():
            raise _Uncacheable("not the Qwen patch layout")
        done, at = {}, 0
        for g, grid in zip(groups, grids, strict=True):
            n = int(grid[1] * grid[2])
            rows = pix[at : at + n].view(n, -1, tps, pp)
            at += n
            for k, d in enumerate(g):
                done[d] = (rows[:, :, k].clone(), grid[None].clone())
                self._put(("frame", sig, d), done[d])
        return done


def _nbytes(t: Any) -> int:
    return int(t.element_size() * t.nelement())


class TemporalPatch:
    """A temporal patch's pixel rows ``(h*w, C*tps*p*p)`` before they are copied anywhere: its
    ``tps`` frames' cached patches ``(h*w, C, p*p)``, stacked on the patch layout's temporal axis
    (``channel, temporal, patch, patch``) only where they are written (:meth:`write_into`).

    Stands in for the row tensor in :func:`join_pieces` and :func:`~interactscope.engines.qwen_mm.collate_left`:
    ``shape``, ``dtype``, ``device`` and ``ndim`` are the rows'.

    Args:
        frames: the frames' patches in time order, each ``(h*w, C, p*p)``, same shape.
    """

    ndim = 2

    def __init__(self, frames: Sequence[Any]):
        self.frames = tuple(frames)
        n, c, pp = (int(x) for x in self.frames[0].shape)
        self.shape = (n, c * len(self.frames) * pp)
        self.dtype, self.device = self.frames[0].dtype, self.frames[0].device

    def to(self, device: Any, moved: dict[int, Any] | None = None) -> TemporalPatch:
        """The patch with its frames on ``device``; ``moved`` (by ``id`` of a frame) carries
        each distinct frame over once across patches."""
        moved = {} if moved is None else moved
        for f in self.frames:
            if id(f) not in moved:
                moved[id(f)] = f.to(device)
        return TemporalPatch([moved[id(f)] for f in self.frames])

    def write_into(self, out: Any) -> None:
        """Write the rows into ``out`` (a contiguous ``shape`` tensor, e.g. a batch tensor's
        slice): one strided pass over the frames' patches."""
        import torch  # optional dependency ([transformers])

        n, c, pp = (int(x) for x in self.frames[0].shape)
        torch.stack(self.frames, dim=2, out=out.view(n, c, len(self.frames), pp))

    def tensor(self) -> Any:
        """The rows as a new tensor ``shape``."""
        import torch  # optional dependency ([transformers])

        return torch.stack(self.frames, dim=2).reshape(self.shape)


def join_pieces(parts: Sequence[Any], out: Any | None = None) -> Any:
    """``parts`` (tensors ``(n_i, *D)`` or :class:`TemporalPatch`) concatenated along the first
    axis, written into ``out`` (``(sum n_i, *D)``) when given, else into a new tensor; each
    part written once. Tensors only: ``torch.cat`` itself.

    Raises:
        RuntimeError: parts whose dtype or trailing shape differ from the first's, or an ``out``
            of another shape (torch's message for tensors only).
    """
    import torch  # optional dependency ([transformers])

    if not any(isinstance(p, TemporalPatch) for p in parts):
        return torch.cat(list(parts), dim=0) if out is None else torch.cat(list(parts), out=out)
    first = parts[0]
    rows = sum(int(p.shape[0]) for p in parts)
    tail = tuple(first.shape[1:])
    for p in parts:
        if tuple(p.shape[1:]) != tail or p.dtype != first.dtype:
            raise RuntimeError(
                f"pieces {tuple(p.shape)} {p.dtype} vs {tuple(first.shape)} {first.dtype}"
            )
    if out is None:
        out = torch.empty((rows, *tail), dtype=first.dtype, device=first.device)
    elif tuple(out.shape) != (rows, *tail):
        raise RuntimeError(f"out {tuple(out.shape)} for {(rows, *tail)} rows")
    at = 0
    for p in parts:
        n = int(p.shape[0])
        if isinstance(p, TemporalPatch):
            p.write_into(out[at : at + n])
        else:
            out[at : at + n].copy_(p)
        at += n
    return out


def _sig(kw: dict) -> str:
    """The processor call's keyword arguments as a key (``fps`` left out: frames are never
    sampled)."""
    return repr(sorted((k, repr(v)) for k, v in kw.items() if k != "fps"))


class _Uncacheable(Exception):
    """The processor's output cannot be assembled from pieces."""


class _Proxy:
    """Stands in for an image or video processor during one call; anything but ``__call__`` is
    the real processor's."""

    def __init__(self, cache: FrameCache, inner: Any, kind: str):
        self._cache, self._inner, self._kind = cache, inner, kind

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __call__(self, *args: Any, **kw: Any) -> Any:
        # transformers 5.24+ pass the items positionally, earlier 5.x as images= / videos=
        name = "images" if self._kind == "image" else "videos"
        by_name = not args and name in kw
        items = kw.pop(name) if by_name else (args[0] if args else None)
        if len(args) > 1 or (args and name in kw):
            return self._inner(*args, **kw)  # not a call shape the cache knows
        pieces = self._pieces(items, kw)
        if pieces is not None:
            try:
                return self._assemble(pieces, kw)
            except _Uncacheable:
                pass
        return self._inner(**{name: items}, **kw) if by_name else self._inner(items, **kw)

    def _pieces(self, items: Any, kw: dict) -> list[list[list[np.ndarray]]] | None:
        """Per item (image or video), its pieces' frames; None when the call is not cacheable."""
        inner = self._inner
        if not isinstance(items, list) or not items or self._cache.max_bytes <= 0:
            return None
        if self._kind == "image":
            if not type(inner).__name__.startswith("Qwen2VLImageProcessor"):
                return None
            ok = all(isinstance(a, np.ndarray) and a.ndim == 3 for a in items)
            return [[[a]] for a in items] if ok else None
        if type(inner).__name__ != "Qwen2VLVideoProcessor" or kw.get("return_metadata"):
            return None
        if kw.get("do_sample_frames", True) or kw.get("cap_pixels_per_frame"):
            return None
        if getattr(inner, "cap_pixels_per_frame", None):
            return None
        tps = int(kw.get("temporal_patch_size") or inner.temporal_patch_size)
        out = []
        for v in items:
            if not isinstance(v, list) or not v or len(v) % tps:
                return None
            if any(not isinstance(f, np.ndarray) or f.shape != v[0].shape for f in v):
                return None
            out.append([v[i : i + tps] for i in range(0, len(v), tps)])
        return out

    def _assemble(self, pieces: list[list[list[np.ndarray]]], kw: dict) -> Any:
        import torch  # optional dependency ([transformers])
        from transformers.feature_extraction_utils import (
            BatchFeature,  # optional dependency ([transformers])
        )

        pix, grids = [], []
        if self._kind == "video":  # every item's new frames processed in one call
            flat = self._cache.video_pieces(self._inner, [p for it in pieces for p in it], kw)
            at = [0, *np.cumsum([len(it) for it in pieces]).tolist()]
            by_item = [flat[a:b] for a, b in zip(at, at[1:], strict=False)]
        else:
            by_item = [[self._cache.piece(self._inner, p, kw) for p in it] for it in pieces]
        for parts in by_item:
            hw = {tuple(g[0, 1:].tolist()) for _, g in parts}
            if len(hw) != 1:
                raise _Uncacheable("pieces of different sizes")
            pix.extend(p for p, _ in parts)
            grid = parts[0][1].clone()
            grid[0, 0] = sum(int(g[0, 0]) for _, g in parts)
            grids.append(grid)
        names = ("pixel_values_videos", "video_grid_thw")
        if self._kind == "image":
            names = ("pixel_values", "image_grid_thw")
        if getattr(self._cache._lazy, "on", False):
            rows = sum(int(p.shape[0]) for p in pix)
            zero = torch.zeros((), dtype=pix[0].dtype, device=pix[0].device)
            pixels = zero.expand(rows, *pix[0].shape[1:])
            self._cache._placeholders[id(pixels)] = (pixels, pix)
        else:
            pixels = join_pieces(pix)
        data = {names[0]: pixels, names[1]: torch.cat(grids, dim=0)}
        return BatchFeature(data=data, tensor_type=kw.get("return_tensors"))

"""Process each frame once: a cache of the Qwen vision processors' outputs per frame.

Consecutive decision points share all but their newest frames, yet the Hugging Face processor
resizes and normalises every frame again at each call. :class:`FrameCache` sits in front of the
processor's ``image_processor`` and ``video_processor`` for the duration of one processor call
(:meth:`FrameCache.installed`) and answers them piece by piece:

- an image (``Qwen2VLImageProcessor``): its ``pixel_values`` rows and ``image_grid_thw`` row;
- a video (``Qwen2VLVideoProcessor``): each frame is resized, rescaled and normalised once, as a
  one-frame video of its own (the processor pads it to a temporal patch by repeating it; the
  first of the copies is kept: ``(h*w patches, channels, patch_size**2)``). A temporal patch
  (``temporal_patch_size`` consecutive frames, 2 for Qwen) is those frames' patches stacked on
  the temporal axis of the processor's patch layout (``channel, temporal, patch, patch``), a
  copy, no resize; it is cached too. The video's ``pixel_values_videos`` are its temporal
  patches concatenated in time order and its ``video_grid_thw`` is ``[sum of the pieces' t,
  h, w]``. This equals processing the whole video because resizing, rescaling and normalising
  act on each frame alone and the patch layout is time-major; past the frame cap, where the
  uniform picks shift at every decision point and so pair frames differently, a new pair costs
  a copy of two cached frames instead of a resize.

A piece is keyed by the call's keyword arguments (``fps`` left out: frames are never sampled)
and a digest of its frames' bytes, shape and dtype. An array seen before is recognised by
identity without hashing again, so frames must not be modified in place (the media layer's are
read-only). The store is locked: threads may share one cache. Calls the cache cannot reproduce
exactly go to the processor unchanged: another processor class, ``return_metadata`` (Qwen2.5-VL / Qwen3-VL video metadata),
``cap_pixels_per_frame`` (the pixel budget then depends on the frame count), frame sampling, a
frame count not a multiple of the temporal patch, frames of different sizes, or outputs with
other keys. Entries are evicted least recently used beyond ``max_bytes``, temporal patches before
frames: past the frame cap the patches of a batch's points outweigh their frames many times
over, and letting them push frames out would process those frames again.
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

__all__ = ["FrameCache"]

_IMAGE_KEYS = {"pixel_values", "image_grid_thw"}
_VIDEO_KEYS = {"pixel_values_videos", "video_grid_thw"}


class FrameCache:
    """Processed frames keyed by content (see the module docstring).

    Args:
        max_bytes: bound on the cached tensors' bytes (least recently used temporal patches
            evicted first, then least recently used frames); 0 keeps nothing.

    Attributes:
        hits, misses: frames sent that were not processed again (answered from the cache) /
            frames the processor processed, since creation.
    """

    def __init__(self, max_bytes: int = 256 << 20):
        self.max_bytes = int(max_bytes)
        self.hits = 0
        self.misses = 0
        self._store: OrderedDict[tuple, tuple[Any, Any]] = OrderedDict()  # frames, images
        self._pairs: OrderedDict[tuple, tuple[Any, Any]] = OrderedDict()  # temporal patches
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
        shape, and its pieces wait in :meth:`pieces_of` until a batch joins them (one copy per
        distinct frame instead of a row copy and then a batch copy); :meth:`release` forgets
        them. The processor only reads the grids, never the pixels."""
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
    def _tier(self, key: tuple) -> OrderedDict:
        """Frames and images (processed by the processor) / temporal patches (copies of cached
        frames: cheap to build again, and past the frame cap rarely asked for twice)."""
        return self._pairs if key[0] == "video" else self._store

    def _get(self, key: tuple) -> tuple[Any, Any] | None:
        with self._lock:
            tier = self._tier(key)
            hit = tier.get(key)
            if hit is not None:
                tier.move_to_end(key)
            return hit

    def _put(self, key: tuple, value: tuple[Any, Any]) -> None:
        """Store ``value``; beyond ``max_bytes`` the least recently used temporal patches go
        first, frames only when none is left (a patch never pushes out a frame)."""
        size = _nbytes(value[0])
        tier = self._tier(key)
        with self._lock:
            if size > self.max_bytes or key in tier:
                return
            tier[key] = value
            self._bytes += size
            while self._bytes > self.max_bytes:
                victims = self._pairs if self._pairs else self._store
                _, (old, _) = victims.popitem(last=False)
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
        """(pixel rows ``(t*h*w, C*tps*p*p)``, grid row ``(1, 3)``) per temporal patch of
        ``pieces`` (each ``tps`` frames); a cached temporal patch as it is, another built from
        its frames' cached patches, the frames never seen processed in one processor call.

        Raises:
            _Uncacheable: the processor's output is not the Qwen patch layout.
        """
        import torch  # optional dependency ([transformers])

        sig = _sig(kw)
        keys = [("video", sig, *(self._digest(f) for f in p)) for p in pieces]
        out = [self._get(k) for k in keys]
        have: dict[str, tuple[Any, Any]] = {}
        new: dict[str, np.ndarray] = {}
        for p, k, hit in zip(pieces, keys, out, strict=True):
            for f, d in zip(p, k[2:], strict=True):
                if hit is None and d not in have and d not in new:
                    got = self._get(("frame", sig, d))
                    have.update({d: got} if got is not None else {})
                    new.update({} if got is not None else {d: f})
        have.update(self._frames(inner, new, sig, kw))

        for i, (k, hit) in enumerate(zip(keys, out, strict=True)):
            if hit is None:
                parts = [have[d] for d in k[2:]]
                if len({tuple(g[0].tolist()) for _, g in parts}) != 1:
                    raise _Uncacheable("frames of different sizes in one temporal patch")
                rows = torch.stack([r for r, _ in parts], dim=2)
                out[i] = (rows.reshape(rows.shape[0], -1), parts[0][1])
                self._put(k, out[i])
        self.misses += len(new)
        self.hits += sum(len(p) for p in pieces) - len(new)
        return out

    def _frames(self, inner: Any, frames: dict[str, np.ndarray], sig: str, kw: dict) -> dict:
        """Per digest, the frame's patches ``(h*w, C, p*p)`` and grid row ``(1, 3)``, t = 1:
        each frame a one-frame video (padded by the processor to a temporal patch of copies of
        it: the first copy kept), all in one processor call; stored under ``("frame", ...)``."""
        if not frames:
            return {}
        res = inner([[f] for f in frames.values()], **kw)
        if set(res.keys()) != _VIDEO_KEYS:
            raise _Uncacheable(sorted(res.keys()))
        pix, grids = res["pixel_values_videos"], res["video_grid_thw"]
        tps = int(kw.get("temporal_patch_size") or inner.temporal_patch_size)
        pp = int(kw.get("patch_size") or inner.patch_size) ** 2
        if pix.ndim != 2 or pix.shape[1] % (tps * pp) or (grids[:, 0] != 1).any():
            raise _Uncacheable("not the Qwen patch layout")
        done, at = {}, 0
        for d, grid in zip(frames, grids, strict=True):
            n = int(grid[1] * grid[2])
            rows = pix[at : at + n].view(n, -1, tps, pp)[:, :, 0].clone()
            at += n
            done[d] = (rows, grid[None].clone())
            self._put(("frame", sig, d), done[d])
        return done


def _nbytes(t: Any) -> int:
    return int(t.element_size() * t.nelement())


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
            pixels = pix[0].new_zeros(()).expand(rows, *pix[0].shape[1:])
            self._cache._placeholders[id(pixels)] = (pixels, pix)
        else:
            pixels = torch.cat(pix, dim=0)
        data = {names[0]: pixels, names[1]: torch.cat(grids, dim=0)}
        return BatchFeature(data=data, tensor_type=kw.get("return_tensors"))

"""Serving load: many models behind one Ray Serve deployment, aotishim against
torch's own AOTInductor runner in the same deployment.

Two architectures are compiled once per runtime (``link_libtorch=False`` for
aotishim, torch's defaults for ``torch._inductor.aoti_load_package``) and
copied under ``--small`` + ``--large`` model IDs; each copy of a library gets
a distinct trailer after its ELF image, so every ID is a library of its own
bytes (aotishim would otherwise reuse the code of one it has loaded). Then,
for each runtime in turn, a local cluster runs ``--replicas`` replicas of
:class:`aotishim.serve.ModelServer` (the torch side overrides only
``open_model``), each keeping ``--max-models`` models, and ``--clients``
threads post ``.npy`` requests over HTTP on 127.0.0.1 for ``--seconds``,
the model IDs drawn from a Zipf distribution (exponent ``--zipf``).

Reported per runtime: throughput, p50/p99 latency, errors, model loads and
evictions per replica, and each replica's RSS over time (sampled from
/proc by pid). Writes ``--out`` (JSON) and ``--chart`` (PNG, matplotlib from
the ``bench`` extra).

    python benchmarks/serve_load.py [--small 50] [--large 5] [--replicas 2]
        [--max-models 8] [--clients 4] [--seconds 40] [--out results/serve_load.json]
        [--chart results/serve_load.png]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import socket
import statistics
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def architectures():
    import torch

    class Small(torch.nn.Module):  # a per-customer head
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(32, 64)
            self.b = torch.nn.Linear(64, 8)

        def forward(self, x):
            return self.b(torch.relu(self.a(x)))

    class Large(torch.nn.Module):  # the zoo-sized MLP of cpu_vs_torch.py
        def __init__(self):
            super().__init__()
            self.l1 = torch.nn.Linear(512, 1024)
            self.l2 = torch.nn.Linear(1024, 1024)
            self.l3 = torch.nn.Linear(1024, 256)

        def forward(self, x):
            return self.l3(torch.relu(self.l2(torch.relu(self.l1(x)))))

    torch.manual_seed(0)
    return {"small": (Small().eval(), (torch.randn(4, 32),)),
            "large": (Large().eval(), (torch.randn(8, 512),))}


def _distinct(data: bytes, model_id: str) -> bytes:
    return data + b"\0serve-load " + model_id.encode()


def build_stores(work: Path, small: int, large: int) -> tuple[Path, Path, dict, list[str]]:
    """Stores of ID.so (aotishim) and ID.pt2 (torch), the input per ID, the IDs."""
    import zipfile

    import torch
    from aotishim import export

    ours_dir, theirs_dir = work / "aotishim", work / "torch"
    ours_dir.mkdir()
    theirs_dir.mkdir()
    inputs, ids = {}, []
    for arch, count in (("small", small), ("large", large)):
        module, args = architectures()[arch]
        ep = torch.export.export(module, args)
        so = export.compile_exported(ep, work / "compiled", name=arch)
        pt2 = Path(torch._inductor.aoti_compile_and_package(
            ep, package_path=str(work / "compiled" / f"{arch}.pt2")))
        with zipfile.ZipFile(pt2) as z:
            members = {i.filename: z.read(i) for i in z.infolist()}
        for k in range(count):
            model_id = f"{arch}{k:03d}"
            ids.append(model_id)
            inputs[model_id] = args[0].numpy()
            (ours_dir / f"{model_id}.so").write_bytes(_distinct(so.read_bytes(), model_id))
            for suffix in (".weights.blob", ".spec.json"):
                shutil.copy(so.with_name(so.stem + suffix), ours_dir / f"{model_id}{suffix}")
            with zipfile.ZipFile(theirs_dir / f"{model_id}.pt2", "w") as z:
                for name, data in members.items():
                    z.writestr(name, _distinct(data, model_id) if name.endswith(".so") else data)
    return ours_dir, theirs_dir, inputs, ids


class TorchRunnerModel:
    """torch's runner behind the interface ModelServer uses."""

    def __init__(self, path: Path, device: str) -> None:
        import torch

        self._torch = torch
        self._runner = torch._inductor.aoti_load_package(str(path))
        self.input_names = ["x"]
        self.input_specs = None
        self.spec = None
        self.memory_stats = {"tensors": 0, "owned_bytes": 0}

    def run(self, *arrays):
        with self._torch.no_grad():
            out = self._runner(*(self._torch.from_numpy(a) for a in arrays))
        out = out if isinstance(out, (list, tuple)) else [out]
        return tuple(o.numpy() for o in out)

    def close(self) -> list:
        self._runner = None
        return []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024
    except (OSError, StopIteration):
        return None


def _post(url: str, body: bytes, model_id: str, timeout: float) -> int:
    req = urllib.request.Request(url, data=body, headers={
        "serve_multiplexed_model_id": model_id, "content-type": "application/x-npy"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return -1


def _replica_stats(url: str, replicas: int, tries: int = 200) -> dict[str, dict]:
    """Stats of every replica (GET /stats lands on one at random)."""
    seen: dict[str, dict] = {}
    for _ in range(tries):
        with urllib.request.urlopen(url + "/stats", timeout=30) as r:
            s = json.loads(r.read())
        seen[s["replica"]] = s
        if len(seen) == replicas:
            break
    return seen


def run_side(runtime: str, store: Path, inputs: dict, ids: list[str], ns) -> dict:
    import ray
    from ray import serve

    from aotishim.serve import ModelServer

    if runtime == "torch":
        class TorchRunnerServer(ModelServer.func_or_class):
            def __init__(self, *args, **kwargs):
                import torch  # noqa: F401  (at start-up, as a torch server would, not in a load)

                super().__init__(*args, **kwargs)

            def open_model(self, path):
                return TorchRunnerModel(path, self._device)

        deployment = serve.deployment(TorchRunnerServer, name="ModelServer",
                                      max_ongoing_requests=16)
    else:
        deployment = ModelServer
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    bodies = {}
    for model_id, x in inputs.items():
        buffer = io.BytesIO()
        np.save(buffer, x)
        bodies[model_id] = buffer.getvalue()
    ranks = np.arange(1, len(ids) + 1, dtype=np.float64)
    weights = ranks ** -ns.zipf
    weights /= weights.sum()
    order = list(np.random.default_rng(7).permutation(ids))  # popularity independent of size

    ray.init(num_cpus=ns.replicas + 1, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        app = deployment.options(num_replicas=ns.replicas,
                                 ray_actor_options={"num_cpus": 1}).bind(
            str(store), max_models=ns.max_models, device="cpu")
        serve.run(app, name="load", route_prefix="/")
        pids = {r: s["pid"] for r, s in _replica_stats(url, ns.replicas).items()}
        stop = time.monotonic() + ns.seconds
        results: list[list[tuple[float, int, str]]] = [[] for _ in range(ns.clients)]
        rss: dict[str, list] = {r: [] for r in pids}
        t0 = time.monotonic()

        def client(k: int) -> None:
            rng = np.random.default_rng(100 + k)
            while time.monotonic() < stop:  # bounded by time; each request by its timeout
                model_id = order[int(rng.choice(len(ids), p=weights))]
                started = time.perf_counter()
                status = _post(url + "/", bodies[model_id], model_id, timeout=60)
                results[k].append((time.perf_counter() - started, status, model_id))

        def sampler() -> None:
            while time.monotonic() < stop:
                for r, pid in pids.items():
                    rss[r].append((round(time.monotonic() - t0, 2), _rss_mb(pid)))
                time.sleep(0.5)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(ns.clients)]
        threads.append(threading.Thread(target=sampler))
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=ns.seconds + 120)
        elapsed = time.monotonic() - t0
        stats = _replica_stats(url, ns.replicas)
    finally:
        serve.shutdown()
        ray.shutdown()
    flat = [r for rs in results for r in rs]
    ok = sorted(lat for lat, status, _ in flat if status == 200)
    return {
        "runtime": runtime,
        "requests": len(flat),
        "ok": len(ok),
        "errors": {str(s): sum(1 for _, st, _ in flat if st == s)
                   for s in sorted({st for _, st, _ in flat if st != 200})},
        "seconds": round(elapsed, 2),
        "throughput_rps": len(ok) / elapsed,
        "p50_ms": 1e3 * statistics.median(ok) if ok else None,
        "p99_ms": 1e3 * ok[min(len(ok) - 1, int(0.99 * len(ok)))] if ok else None,
        "replicas": {r: {"pid": s["pid"], "loads": s["loads"], "evictions": s["evictions"],
                         "closed": s["closed"], "requests": s["requests"],
                         "rss_mb": rss.get(r, [])} for r, s in stats.items()},
    }


def chart(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_rss, ax_bar) = plt.subplots(1, 2, figsize=(11, 4))
    for side in result["sides"]:
        for k, (r, rep) in enumerate(sorted(side["replicas"].items())):
            points = [(t, m) for t, m in rep["rss_mb"] if m is not None]
            if points:
                ax_rss.plot(*zip(*points), label=f"{side['runtime']} replica {k}",
                            linestyle="-" if side["runtime"] == "aotishim" else "--")
    ax_rss.set_xlabel("seconds")
    ax_rss.set_ylabel("RSS (MiB)")
    ax_rss.set_title("RSS per replica")
    ax_rss.legend(fontsize=7)
    names = [s["runtime"] for s in result["sides"]]
    x = np.arange(len(names))
    ax_bar.bar(x - 0.2, [s["throughput_rps"] for s in result["sides"]], 0.4, label="req/s")
    ax2 = ax_bar.twinx()
    ax2.bar(x + 0.2, [s["p99_ms"] or 0 for s in result["sides"]], 0.4, color="tab:orange",
            label="p99 ms")
    ax_bar.set_xticks(x, names)
    ax_bar.set_ylabel("throughput (req/s)")
    ax2.set_ylabel("p99 latency (ms)")
    ax_bar.set_title("throughput (left bars), p99 (right bars)")
    fig.suptitle(result["title"], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=50)
    parser.add_argument("--large", type=int, default=5)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--max-models", type=int, default=8)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--zipf", type=float, default=1.1)
    parser.add_argument("--runtimes", default="aotishim,torch")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--chart", type=Path)
    ns = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:
        started = time.perf_counter()
        ours, theirs, inputs, ids = build_stores(Path(tmp), ns.small, ns.large)
        print(f"{len(ids)} model IDs ready in {time.perf_counter() - started:.0f} s")
        sides = []
        for runtime in ns.runtimes.split(","):
            side = run_side(runtime, ours if runtime == "aotishim" else theirs, inputs, ids, ns)
            sides.append(side)
            print(json.dumps({k: v for k, v in side.items() if k != "replicas"}))
    result = {
        "title": (f"{ns.small} small + {ns.large} large models, {ns.replicas} replicas x "
                  f"{ns.max_models} models, {ns.clients} clients, {ns.seconds:g} s, Zipf {ns.zipf}"),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "args": vars(ns) | {"out": str(ns.out), "chart": str(ns.chart)},
        "sides": sides,
    }
    print(f"\n{result['title']}")
    print(f"{'runtime':10} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>8}  "
          "loads/evictions/peak RSS MiB per replica")
    for s in sides:
        per = "; ".join(
            f"{r['loads']}/{r['evictions']}/"
            f"{max((m for _, m in r['rss_mb'] if m is not None), default=0):.0f}"
            for r in s["replicas"].values())
        print(f"{s['runtime']:10} {s['throughput_rps']:8.1f} {s['p50_ms'] or 0:8.2f} "
              f"{s['p99_ms'] or 0:8.2f} {sum(s['errors'].values()):8d}  {per}")
    if len(sides) == 2 and sides[1]["throughput_rps"]:
        a, t = sides
        print(f"aotishim/torch: throughput {a['throughput_rps'] / t['throughput_rps']:.2f}, "
              f"p50 {a['p50_ms'] / t['p50_ms']:.2f}, p99 {a['p99_ms'] / t['p99_ms']:.2f}")
    if ns.out:
        ns.out.write_text(json.dumps(result, indent=1))
    if ns.chart:
        chart(result, ns.chart)


if __name__ == "__main__":
    main()

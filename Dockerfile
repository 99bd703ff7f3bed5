# The web UI, built from the committed lock file; only its dist/ reaches the final image.
# Vite needs Node ^20.19 or >=22.12.
FROM node:22-bookworm-slim AS frontend
WORKDIR /frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY frontend/ ./
RUN npm run build

FROM python:3.11-slim
WORKDIR /app
# Which PyTorch build the image carries, named as PyTorch names its wheel indexes
# (https://download.pytorch.org/whl/<variant>): `cpu` keeps the image small for the API and CPU workers;
# `cu128` (CUDA 12.8) is the GPU workers' build. For another CUDA version pass the index's name, e.g.
# `--build-arg TORCH_VARIANT=cu126`, choosing one that PyTorch publishes torch 2.13.0 for and that the host's
# NVIDIA driver supports. The wheels bring the CUDA runtime with them; the host needs only the driver and the
# NVIDIA container toolkit.
ARG TORCH_VARIANT=cpu
# Installed first and alone, from PyTorch's index only: `pip install -e .` below then finds torch==2.13.0
# satisfied and keeps this build instead of taking PyPI's. Its own layer, so code changes don't re-download it.
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/${TORCH_VARIANT}
COPY pyproject.toml README.md alembic.ini ./
COPY backend ./backend
COPY migrations ./migrations
# Optional extras, e.g. `qlora` (bitsandbytes) on GPU workers; empty for the API and CPU workers.
ARG EXTRAS=""
RUN pip install --no-cache-dir -e ".${EXTRAS:+[$EXTRAS]}"
# Where Settings.frontend_dir looks by default: <repo>/frontend/dist next to the editable install's backend/.
COPY --from=frontend /frontend/dist ./frontend/dist
ENV TUNELAB_DATA_DIR=/data
EXPOSE 8000
CMD ["tunelab", "api", "--host", "0.0.0.0", "--port", "8000"]

#!/usr/bin/env bash
# Build the Awele tables on a Slurm cluster: one MPI process a node, every core of the node
# as its threads. Submit from the folder holding the checkout, on a file system every node sees:
#
#     sbatch --nodes=48 scripts/slurm-build.sh 48            # layers 0..48 (see `awele plan --processes 48`)
#     sbatch --nodes=8 --time=12:00:00 scripts/slurm-build.sh 40
#
# Rerun the same command to resume: finished layers are kept, and the layer in progress
# resumes at its last checkpoint when the node count is the same (else it starts over).
# Check any layer afterwards with `awele verify --seeds N --dir "$AWELE_DATABASES"`.
#
# Settings (environment, all optional):
#   AWELE_DATABASES   where the tables go        (default: ./databases, on the shared file system)
#   AWELE_CHECKPOINTS where checkpoints go       (default: $AWELE_DATABASES/checkpoints)
#   AWELE_MEMORY      budget of each process     (default: the node's available memory less 1 GiB)
#   AWELE_CHECKPOINT_INTERVAL  seconds between checkpoints (default: 1800)
#   AWELE_VENV        a virtual environment with `pip install 'awele[mpi]'` to activate
#
#SBATCH --job-name=awele-build
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
#SBATCH --output=awele-build-%j.out
set -euo pipefail

MAX_SEEDS="${1:?usage: sbatch --nodes=K scripts/slurm-build.sh MAX_SEEDS}"
if [[ -n "${AWELE_VENV:-}" ]]; then
    # shellcheck disable=SC1091
    source "$AWELE_VENV/bin/activate"
fi
export AWELE_DATABASES="${AWELE_DATABASES:-$PWD/databases}"
CHECKPOINTS="${AWELE_CHECKPOINTS:-$AWELE_DATABASES/checkpoints}"
THREADS="${SLURM_CPUS_ON_NODE:-$(nproc)}"
MEMORY_OPTION=()
if [[ -n "${AWELE_MEMORY:-}" ]]; then
    MEMORY_OPTION=(--memory "$AWELE_MEMORY")
fi

echo "awele build 0..$MAX_SEEDS on ${SLURM_JOB_NUM_NODES:-?} nodes x $THREADS threads into $AWELE_DATABASES"
awele plan --max-seeds "$MAX_SEEDS" --processes "${SLURM_JOB_NUM_NODES:-1}" --threads "$THREADS" \
    ${AWELE_MEMORY:+--memory-per-process "$AWELE_MEMORY"} | tail -n 3

# srun starts one process a node (--ntasks-per-node=1); with an MPI that srun cannot
# launch, use: mpiexec -n "$SLURM_JOB_NUM_NODES" -ppn 1 awele build ...
status=0
srun --mpi="${AWELE_SRUN_MPI:-pmi2}" awele build --max-seeds "$MAX_SEEDS" --dir "$AWELE_DATABASES" \
    --threads "$THREADS" "${MEMORY_OPTION[@]}" \
    --checkpoint-dir "$CHECKPOINTS" --checkpoint-interval "${AWELE_CHECKPOINT_INTERVAL:-1800}" --json || status=$?
if [[ $status -ne 0 ]]; then
    echo "awele: the build stopped (status $status); submit the same job again to resume it" >&2
    exit "$status"
fi

awele info --dir "$AWELE_DATABASES"

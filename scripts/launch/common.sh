# shellcheck shell=sh disable=SC2034
# common.sh — shared by the launch templates in this directory (sourced, not run): option
# parsing, shell quoting, and either running the launcher command (printing it first), printing
# it only (--dry-run), or writing a batch script around it (--batch FILE).
#
# Every template takes the same options:
#   -n, --ranks N          MPI ranks in all (one per GPU; on the CPU backend, one per core group)
#   --per-node G           ranks per node (GPUs per node); default: the template's
#   --cores-per-rank C     cores for each rank (jsrun -c, srun --cpus-per-task)
#   --gpus-per-rank K      GPUs for each rank (1; 0 for CPU-only runs)
#   --dry-run              print the command and exit without running it
#   --batch FILE           write a batch script that runs the command to FILE (-: stdout)
#   --job-name NAME --time MINUTES --account A --queue Q --output FILE   (batch header)
#   --workdir DIR          directory the batch script runs in (default: the current one)
#   --env NAME=VALUE       exported by the batch script (repeatable)
#   --modules "A B C"      the batch script runs `module load A B C` first (under bash -l,
#                          the login shell that defines `module` on Lmod/Environment Modules)
#   --warn MINUTES         Slurm/LSF: SIGUSR1 to the ranks MINUTES before --time runs out, so
#                          axonn train --checkpoint-dir checkpoints and exits 0 (0: none;
#                          default 5 when the command has --checkpoint-dir, else 0)
#   --chain N              Slurm/LSF, with --batch FILE: submit N jobs, each starting when the
#                          previous one ended, every later one running the command with --resume
#                          (the command needs --checkpoint-dir); with --dry-run, print the
#                          submit commands only
#   -- COMMAND [ARGS...]   what every rank runs, e.g. bin/axonn train --model gpt-12b ...

# q ARG: ARG quoted for sh when it needs it.
q() {
  case $1 in
    '' | *[!A-Za-z0-9_./:=,+@%^-]*)
      printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")" ;;
    *) printf '%s' "$1" ;;
  esac
}

# qall ARGS...: the arguments as one quoted command line.
qall() {
  qall_out=""
  for qall_a in "$@"; do qall_out="$qall_out${qall_out:+ }$(q "$qall_a")"; done
  printf '%s' "$qall_out"
}

die() {
  echo "$LAUNCH_NAME: $*" >&2
  exit 2
}

usage() {
  sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
  exit "${1:-0}"
}

need_value() { [ $# -ge 2 ] || die "option $1 needs a value"; }

# Sets RANKS PER_NODE CORES GPUS DRY_RUN BATCH JOB_NAME TIME ACCOUNT QUEUE OUTPUT WORKDIR ENVS
# MODULES WARN CHAIN, CMD (the quoted command after --) and RESUME_CMD (CMD with --resume).
# The template sets SCHEDULER first: none (mpirun), slurm or lsf.
parse_launch_args() {
  RANKS="" DRY_RUN=0 BATCH="" JOB_NAME=axonn TIME=30 ACCOUNT="" QUEUE="" OUTPUT=""
  WORKDIR=$(pwd) ENVS="" CMD="" MODULES="" WARN="" CHAIN=1 chain_given=0
  while [ $# -gt 0 ]; do
    case $1 in
      -n | --ranks) need_value "$@"; RANKS=$2; shift ;;
      --per-node) need_value "$@"; PER_NODE=$2; shift ;;
      --cores-per-rank) need_value "$@"; CORES=$2; shift ;;
      --gpus-per-rank) need_value "$@"; GPUS=$2; shift ;;
      --dry-run | --print) DRY_RUN=1 ;;
      --batch) need_value "$@"; BATCH=$2; shift ;;
      --job-name) need_value "$@"; JOB_NAME=$2; shift ;;
      --time) need_value "$@"; TIME=$2; shift ;;
      --account) need_value "$@"; ACCOUNT=$2; shift ;;
      --queue | --partition) need_value "$@"; QUEUE=$2; shift ;;
      --output) need_value "$@"; OUTPUT=$2; shift ;;
      --workdir) need_value "$@"; WORKDIR=$2; shift ;;
      --env)
        need_value "$@"
        case $2 in [A-Za-z_]*=*) ;; *) die "--env expects NAME=VALUE (got '$2')" ;; esac
        ENVS="${ENVS}export $(q "$2")
"
        shift ;;
      --modules) need_value "$@"; MODULES=$2; shift ;;
      --warn) need_value "$@"; WARN=$2; shift ;;
      --chain) need_value "$@"; CHAIN=$2; chain_given=1; shift ;;
      -h | --help) usage 0 ;;
      --) shift; break ;;
      *) die "unknown option $1 (see --help)" ;;
    esac
    shift
  done
  [ $# -gt 0 ] || die "no command given after -- (see --help)"
  is_count "$RANKS" || die "--ranks must be a positive integer (got '$RANKS')"
  is_count "$PER_NODE" || die "--per-node must be a positive integer (got '$PER_NODE')"
  is_count "$CORES" || die "--cores-per-rank must be a positive integer (got '$CORES')"
  case $GPUS in '' | *[!0-9]*) die "--gpus-per-rank must be 0 or more (got '$GPUS')" ;; esac
  is_count "$TIME" || die "--time must be minutes (got '$TIME')"
  CMD=$(qall "$@")
  NODES=$(((RANKS + PER_NODE - 1) / PER_NODE))
  [ -n "$OUTPUT" ] || OUTPUT="$JOB_NAME.out"
  check_modules
  has_checkpoint_dir "$@" && ckpt=1 || ckpt=0
  check_warn
  check_chain
  RESUME_CMD=$CMD
  has_arg --resume "$@" || RESUME_CMD="$CMD --resume"
}

# has_arg NAME ARGS...: ARGS hold NAME (or NAME=...).
has_arg() {
  has_arg_name=$1; shift
  for has_arg_a in "$@"; do
    case $has_arg_a in "$has_arg_name" | "$has_arg_name"=*) return 0 ;; esac
  done
  return 1
}
has_checkpoint_dir() { has_arg --checkpoint-dir "$@"; }

# module names: words of letters, digits and ._/+@:- (no shell syntax in a `module load` line)
check_modules() {
  check_list=""
  for check_m in $MODULES; do
    case $check_m in *[!A-Za-z0-9._/+@:-]*) die "--modules: '$check_m' is not a module name" ;; esac
    check_list="$check_list${check_list:+ }$check_m"
  done
  MODULES=$check_list  # one blank between names
}

# --warn: minutes before the time limit; the default asks for it only when there is a checkpoint
# to write (SIGUSR1 ends a run without --checkpoint-dir, as SIGTERM does).
check_warn() {
  if [ -z "$WARN" ]; then
    WARN=0
    if [ "$SCHEDULER" != none ] && [ "$ckpt" = 1 ]; then
      WARN=5
      [ "$TIME" -gt 10 ] || WARN=$((TIME / 2))
    fi
    return 0
  fi
  case $WARN in '' | *[!0-9]*) die "--warn must be minutes, 0 or more (got '$WARN')" ;; esac
  WARN=$((WARN + 0))
  [ "$WARN" = 0 ] && return 0
  [ "$SCHEDULER" != none ] || die "--warn needs a batch system (slurm-srun.sh or lsf-jsrun.sh)"
  [ "$WARN" -lt "$TIME" ] || die "--warn $WARN must be less than --time $TIME (minutes)"
  [ "$WARN" -le 1092 ] || die "--warn $WARN is over Slurm's and LSF's limit (1092 minutes)"
}

check_chain() {
  [ "$chain_given" = 1 ] || return 0
  is_count "$CHAIN" || die "--chain must be a positive integer (got '$CHAIN')"
  [ "$SCHEDULER" != none ] || die "--chain needs a batch system (slurm-srun.sh or lsf-jsrun.sh)"
  if [ -z "$BATCH" ] || [ "$BATCH" = - ]; then
    die "--chain needs --batch FILE (the script the first job runs; FILE's .resume twin the others)"
  fi
  [ "$ckpt" = 1 ] ||
    die "--chain: the command has no --checkpoint-dir, so a later job would have nothing to --resume from"
}

is_count() { case $1 in '' | *[!0-9]* | 0) return 1 ;; esac; }

# hh:mm from minutes
hhmm() { printf '%02d:%02d' $(($1 / 60)) $(($1 % 60)); }

# The first line of a batch script: sh, or bash -l where `module` must be defined.
shebang() { if [ -n "$MODULES" ]; then echo "#!/bin/bash -l"; else echo "#!/bin/sh"; fi; }

# The batch body after the scheduler header: modules, cd, exports, the command (printed, then
# run). With FORWARD_WARN=1 and a warning time (LSF, which signals the batch shell too), the
# shell runs the launcher in the background and passes SIGUSR1 on to it instead of dying of it.
# shellcheck disable=SC2016
batch_body() {
  echo "# generated by $LAUNCH_NAME for $RANKS rank(s) on $NODES node(s)"
  [ -z "$MODULES" ] || echo "module load $MODULES"
  echo "set -eu"
  echo "cd $(q "$WORKDIR")"
  printf '%s' "$ENVS"
  echo "echo $(q "+ $1")"
  if [ "${FORWARD_WARN:-0}" = 1 ] && [ "$WARN" -gt 0 ]; then
    echo "# SIGUSR1 (the warning before the time limit) goes on to the launcher and its ranks"
    echo "$1 &"
    echo 'launcher=$! got=0'
    echo "trap 'got=1; kill -USR1 \"\$launcher\" 2>/dev/null || :' USR1"
    echo 'status=0; wait "$launcher" || status=$?'
    echo 'while [ "$got" = 1 ]; do got=0; status=0; wait "$launcher" || status=$?; done'
    echo 'exit "$status"'
  else
    echo "$1"
  fi
}

# resume_file FILE: the script of the later jobs of a chain (job.sh -> job.resume.sh)
resume_file() {
  case $(basename "$1") in
    *.*) echo "${1%.*}.resume.${1##*.}" ;;
    *) echo "$1.resume" ;;
  esac
}

# submit_chain LAUNCH RESUME_LAUNCH: writes the script(s) and submits CHAIN jobs, each after
# the previous one (submit_cmd FILE [AFTER_ID] and job_id_of OUTPUT come from the template);
# with --dry-run prints the commands, $JOBk standing for the id the scheduler gives job k.
submit_chain() {
  chain_resume=$(resume_file "$BATCH")
  CHAIN_RESUME=0
  batch_script "$1" >"$BATCH"
  if [ "$CHAIN" -gt 1 ]; then
    CHAIN_RESUME=1
    batch_script "$2" >"$chain_resume"
    chain_later="job 2"
    [ "$CHAIN" = 2 ] || chain_later="jobs 2-$CHAIN"
    echo "$LAUNCH_NAME: wrote $BATCH (job 1) and $chain_resume ($chain_later, with --resume)"
  else
    echo "$LAUNCH_NAME: wrote $BATCH"
  fi
  [ "$DRY_RUN" = 0 ] || echo "# \$JOBk: the id the scheduler gives job k (nothing submitted: --dry-run)"
  chain_prev="" chain_i=1
  while [ "$chain_i" -le "$CHAIN" ]; do
    chain_file=$BATCH
    [ "$chain_i" = 1 ] || chain_file=$chain_resume
    chain_cmd=$(submit_cmd "$chain_file" "$chain_prev")
    echo "+ $chain_cmd"
    if [ "$DRY_RUN" = 1 ]; then
      chain_prev="\$JOB$chain_i"
    else
      chain_out=$(eval "$chain_cmd") || die "job $chain_i of the chain was not submitted: $chain_out"
      chain_prev=$(job_id_of "$chain_out")
      [ -n "$chain_prev" ] || die "no job id in the scheduler's answer: $chain_out"
      echo "submitted job $chain_prev ($chain_i of $CHAIN)"
    fi
    chain_i=$((chain_i + 1))
  done
  exit 0
}

# finish LAUNCH_COMMAND: writes the batch script, prints, or prints and runs.
finish() {
  [ "$chain_given" = 0 ] || submit_chain "$1" "$2"
  if [ -n "$BATCH" ]; then
    if [ "$BATCH" = - ]; then batch_script "$1"; else batch_script "$1" >"$BATCH"; fi
    [ "$BATCH" = - ] || echo "$LAUNCH_NAME: wrote $BATCH (submit with: $(submit_hint "$BATCH"))"
    exit 0
  fi
  [ -z "$MODULES" ] || die "--modules needs --batch FILE (for a run here, load them in this shell)"
  echo "+ $1"
  [ "$DRY_RUN" = 1 ] && exit 0
  eval "exec $1"
}

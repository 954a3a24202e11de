# The held-out programs of issue 43's experiments (gpu_default.sh, diag_call.sh),
# sourced by both: cmd_of PROG prints its command line (words). Needs D (this
# directory); each program's options come from GPT2_ARGS, LAUNCH_ARGS, JAX_ARGS,
# MLP_ARGS, TRAIN_ARGS.
# shellcheck shell=bash
cmd_of() { # prog -> the command line (words); nothing for an unknown program
    case $1 in
    gpt2) echo "python3 $D/torch_workloads.py gpt2 ${GPT2_ARGS:-}" ;;
    launch) echo "python3 $D/launch_bound.py ${LAUNCH_ARGS:-}" ;;
    jax) echo "python3 $D/jax_loop.py ${JAX_ARGS:-}" ;;
    mlp) echo "python3 $D/torch_workloads.py mlp ${MLP_ARGS:-}" ;;
    train) echo "python3 $D/torch_workloads.py train ${TRAIN_ARGS:-}" ;;
    *) echo "" ;;
    esac
}

"""`geneb env list` and `geneb env build`: the runtime environments of envs/."""

from __future__ import annotations

import argparse

from geneb.cli.common import CliError, read_registry


def cmd_env_list(args: argparse.Namespace) -> str:
    from geneb.core.envs import DEFAULT_ENV, EnvError, env_status

    registry = read_registry(args.sheet)
    served: dict[str, list[str]] = {}
    for model, spec in registry.models.items():
        served.setdefault(spec.env_name, []).append(model)
    try:
        rows = env_status(prefix=args.prefix)
    except EnvError as err:
        raise CliError(str(err)) from err
    lines = []
    for row in rows:
        models = served.get(row["env"], [])
        if row["env"] == DEFAULT_ENV:  # its models run in the workflow's own interpreter: nothing to build
            state = "the workflow's own environment (no venv needed)"
        else:
            state = "built" if row["built"] else f"not built (`geneb env build {row['env']}`)"
        default = " (default)" if row["env"] == DEFAULT_ENV else ""
        lines.append(
            f"{row['env']}{default}: transformers {row['transformers'] or '-'}; {state}; {row['where']}\n"
            f"  {len(models)} model(s): {', '.join(models) or '-'}"
        )
    return "\n".join(lines)


def cmd_env_build(args: argparse.Namespace) -> str:
    from geneb.core.envs import EnvError, build_env

    try:
        venv = build_env(args.name, prefix=args.prefix, python=args.python, say=lambda line: print(line, flush=True))
    except EnvError as err:
        raise CliError(str(err)) from err
    return str(venv / "bin" / "python")

# isthmus/bench/campaign.py: running a plan: every point that the results folder does not
# already hold is launched in plan order, with a rich progress bar, and recorded (ok or
# failed) as soon as it ends, so an interrupted campaign resumes where it stopped.
from __future__ import annotations

import sys
from dataclasses import dataclass

from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from .launchers import run_launch
from .plan import Plan
from .results import ResultStore


@dataclass
class CampaignOutcome:
    total: int
    skipped: int       # already in the results folder
    ran: int
    failed: list[dict]
    interrupted: bool = False


def run_campaign(plan: Plan, folder, console, retry_failed: bool = False,
                 argv: list[str] | None = None) -> CampaignOutcome:
    store = ResultStore(folder)
    done = store.completed(include_failed=not retry_failed)
    todo = [p for p in plan.points if p.key not in done]
    skipped = len(plan.points) - len(todo)
    meta = store.start_session(plan, argv or sys.argv)
    failed: list[dict] = []
    ran = 0
    interrupted = False
    columns = (TextColumn("[bold]{task.fields[what]}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
    try:
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task("campaign", total=len(plan.points), completed=skipped,
                                     what=plan.name)
            for p in todo:
                progress.update(task, what=f"run {p.run + 1}/{plan.runs} {p.benchmark} {p.library} "
                                           f"{p.profile.name} n={p.ranks}")
                result = run_launch(p.launch(plan.timeout, plan.env))
                launch = store.append_launch(p, result, plan.name)
                ran += 1
                if launch["status"] != "ok":
                    failed.append(launch)
                    progress.console.print(f"[yellow]failed[/]: {p.benchmark} {p.library} {p.profile.name} "
                                           f"n={p.ranks} run {p.run + 1}: {launch['error']}")
                progress.advance(task)
    except KeyboardInterrupt:
        interrupted = True
    store.end_session(meta, launched=ran, failed=len(failed), interrupted=interrupted)
    return CampaignOutcome(len(plan.points), skipped, ran, failed, interrupted)

"""Two specialists on one request, their reasoning shown: print what each one said."""

import thoughtline

run = thoughtline.run(
    "Design a rate limiter for a public HTTP API.",
    roles=["architect", "reviewer"],
    chain_of_thought="surface",
)
for task in run.tasks:
    print(f"## {task.role}: {task.status}")
    print("answer:", task.output)
    print("reasoning:", task.reasoning)
    print("notice:", task.reasoning_notice)

"""A conversation: the follow-up continues the first run, so the architect is sent the
first request and its own answer again before the new request."""

import thoughtline

with thoughtline.Conversation() as chat:
    first = chat.send("Design a rate limiter for a public HTTP API.", roles=["architect"])
    second = chat.send("Now make it shorter.")

for run in (first, second):
    (task,) = run.tasks
    print(f"## {task.name}: {task.status} (continues {run.continues})")
    print("answer:", task.output)
    if task.history is not None:
        print("earlier turns sent:", task.history["turns"])

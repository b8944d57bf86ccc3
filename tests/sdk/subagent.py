"""A query() whose model delegates to a subagent defined in `agents`: the child's messages
arrive with parent_tool_use_id, its lifecycle as typed task messages."""

from _sdk import options, run, summarize
from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    SystemMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    UserMessage,
    query,
)


async def main(obs):
    obs["messages"] = []
    obs["attributed"] = []
    obs["tasks"] = []
    agents = {
        "greeter": AgentDefinition(
            description="Reads greeting files and reports their text.",
            prompt="You are the greeter subagent. Read the file you are asked about and quote it.",
            tools=["Read", "Grep"],
            model="haiku",
        )
    }
    async for message in query(
        prompt="What does greeting.txt say? Ask the greeter.",
        options=options(agents=agents, allowed_tools=["Read"]),
    ):
        obs["messages"].append(summarize(message))
        if isinstance(message, (AssistantMessage, UserMessage)) and message.parent_tool_use_id:
            obs["attributed"].append({"type": summarize(message)["type"],
                                      "parent_tool_use_id": message.parent_tool_use_id})
        if isinstance(message, TaskStartedMessage):
            obs["tasks"].append({"subtype": "task_started", "task_id": message.task_id,
                                 "tool_use_id": message.tool_use_id, "task_type": message.task_type,
                                 "description": message.description})
        if isinstance(message, TaskNotificationMessage):
            obs["tasks"].append({"subtype": "task_notification", "task_id": message.task_id,
                                 "tool_use_id": message.tool_use_id, "status": message.status,
                                 "summary": message.summary, "output_file": message.output_file})
        if isinstance(message, SystemMessage) and message.subtype == "init":
            obs["agents"] = message.data.get("agents")
            obs["tools"] = message.data.get("tools")


run(main)

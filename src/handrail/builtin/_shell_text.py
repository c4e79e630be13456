"""What run_shell and shell_output say to the model, in English and Chinese.

The message catalogs, the size of the output one result shows, and the short form of a
command line used in summaries and notices.
"""

from __future__ import annotations

__all__ = ["CATALOG", "OUTPUT_CHARS", "short_command"]

OUTPUT_CHARS = 30_000
"""Characters of output one result shows (head and tail), for run_shell and shell_output."""

CATALOG = {
    "en": {
        "timeout_range": (
            "timeout_seconds is in seconds and must be between 1 and {max:g} (10 minutes); got "
            "{got:g}.{hint} For longer work, use run_in_background=true and check it with "
            "shell_output."
        ),
        "ms_hint": " That looks like milliseconds: {secs:g} seconds would be {got:g} / 1000.",
        "empty": "command is empty or only whitespace; give the shell command to run.",
        "nul": "command contains a NUL character, which no shell command can contain.",
        "no_output": "(no output)",
        "exit_failed": "Exit code {code}.",
        "exit_signal": "Killed by signal {name} (exit code {code}).",
        "timeout": (
            "Timed out after {secs:g} s: the command and every process it started were stopped "
            "(SIGTERM, then SIGKILL after 2 s). Output so far is below. If it needs longer, call "
            "again with a larger timeout_seconds (at most {max:g}), or run it with "
            "run_in_background=true."
        ),
        "sandbox_hint": (
            "Note: the command ran in the OS sandbox: it can write only inside {roots} and "
            "$TMPDIR; .git and .handrail are read-only{net}. A 'Permission denied' or "
            "'Read-only file system' error above may come from it; use the file tools for "
            "edits, or ask the user to widen the sandbox in the run_shell settings."
        ),
        "net_off": ", and there is no network",
        "temp_in_root": (
            "run_shell cannot run commands here: the session's temporary folder ({temp}) lies "
            "inside the workspace or a root, where commands could change what handrail writes "
            "there. Ask the user to set TMPDIR to a folder outside the workspace."
        ),
        "readonly_hint": (
            "Note: nobody approved this command: it ran because it looks read-only, so the "
            "sandbox let it write nowhere but $TMPDIR (/tmp){net}. A 'Read-only file system' "
            "or 'Permission denied' error above comes from that. To change files, use "
            "edit_file or write_file, or a command that changes things (the user is asked "
            "for it)."
        ),
        "plan_hint": (
            "Note: in plan mode every command runs read-only: nothing but $TMPDIR (/tmp) is "
            "writable{net}. A 'Read-only file system' or 'Permission denied' error above comes "
            "from that. Finish the plan and leave plan mode before changing anything."
        ),
        "stale": (
            "Files read earlier in this session that changed while the command ran (read them "
            "again before editing): {paths}"
        ),
        "unavailable": (
            "run_shell cannot run this command: no OS sandbox is available on this machine "
            "({reason}), and the configuration does not allow running commands unsandboxed. Use "
            "the file tools (read_file, grep_search, list_files, edit_file) instead, or ask the "
            "user to enable a sandbox or set allow_unsandboxed in the run_shell settings."
        ),
        "unsandboxed": (
            "(No OS sandbox on this machine: {reason}. The command ran unsandboxed because the "
            "configuration allows it.)"
        ),
        "start_failed": "The command could not be started: {error}.",
        "too_long": (
            "command is longer than {limit:,} bytes, more than one shell command line should "
            "hold. Write the script to a file with write_file and run it, e.g. `bash script.sh`."
        ),
        "cwd_gone": (
            "The working directory {cwd} no longer exists, so the command cannot run there. "
            "Recreate it or ask the user to restart the session in an existing folder."
        ),
        "bg_started": (
            "Started background job {id} (pid {pid}): {command}\nIt is stopped after {secs:g} s. "
            'Check its output and status with shell_output(job_id="{id}"); stop it with '
            'shell_output(job_id="{id}", stop=true).'
        ),
        "bg_exited": "Background job {id} ({command}) exited with code {code} after {secs:.1f} s.",
        "bg_timeout": (
            "Background job {id} ({command}) was stopped at its time limit of {limit:g} s."
        ),
        "bg_stopped": "Background job {id} ({command}) was stopped.",
        "job_unknown": ("There is no background job {id!r} in this session. {known}"),
        "jobs_known": "Known jobs: {ids}.",
        "jobs_none": "No background jobs were started in this session.",
        "status_running": "Job {id} is still running ({secs:.1f} s so far).",
        "status_exited": "Job {id} exited with code {code} after {secs:.1f} s.",
        "status_timeout": "Job {id} was stopped at its time limit of {limit:g} s.",
        "status_stopped": "Job {id} was stopped.",
        "new_output": "New output:",
        "no_new_output": "(no new output)",
        "skipped": "[... {bytes:,} earlier bytes of new output skipped; full log: {path}]",
        "summary_ok": "Ran {command} (exit 0, {secs:.1f} s)",
        "summary_failed": "{command} exited with {code} ({secs:.1f} s)",
        "summary_timeout": "{command} timed out after {secs:g} s",
        "summary_bg": "Started {id}: {command}",
    },
    "zh": {
        "timeout_range": (
            "timeout_seconds 的单位是秒,必须在 1 到 {max:g}(10 分钟)之间;收到的是 {got:g}。"
            "{hint}更长的工作请使用 run_in_background=true,再用 shell_output 查看。"
        ),
        "ms_hint": "这看起来是毫秒:{got:g} 毫秒即 {secs:g} 秒。",
        "empty": "command 为空或只有空白;请给出要运行的 shell 命令。",
        "nul": "command 含有 NUL 字符,shell 命令中不可能出现它。",
        "no_output": "(无输出)",
        "exit_failed": "退出码 {code}。",
        "exit_signal": "被信号 {name} 终止(退出码 {code})。",
        "timeout": (
            "运行 {secs:g} 秒后超时:命令及其启动的所有进程都已被终止(先 SIGTERM,2 秒后 "
            "SIGKILL)。下面是到目前为止的输出。如果需要更长时间,请用更大的 timeout_seconds"
            "(最多 {max:g})重新调用,或使用 run_in_background=true 运行。"
        ),
        "sandbox_hint": (
            "注意:命令在操作系统沙箱中运行:只能写入 {roots} 和 $TMPDIR;.git 和 .handrail "
            "是只读的{net}。上面的 'Permission denied' 或 'Read-only file system' 错误可能来自"
            "沙箱;请用文件工具修改文件,或请用户在 run_shell 设置中放宽沙箱。"
        ),
        "net_off": ",并且没有网络",
        "temp_in_root": (
            "run_shell 无法在此运行命令:会话的临时目录({temp})位于工作区或某个根目录之内,"
            "命令可能改动 handrail 写在那里的内容。请用户把 TMPDIR 设为工作区之外的目录。"
        ),
        "readonly_hint": (
            "注意:没有人批准这条命令:它因看起来只读而直接运行,所以沙箱只允许它写入 "
            "$TMPDIR(/tmp){net}。上面的 'Read-only file system' 或 'Permission denied' "
            "错误由此引起。要修改文件,请用 edit_file 或 write_file,或使用会修改内容的命令"
            "(会请求用户批准)。"
        ),
        "plan_hint": (
            "注意:计划模式下所有命令都以只读方式运行:除 $TMPDIR(/tmp)外都不可写{net}。"
            "上面的 'Read-only file system' 或 'Permission denied' 错误由此引起。"
            "请先完成计划并退出计划模式,再做任何修改。"
        ),
        "stale": "本会话之前读过、在命令运行期间被修改的文件(编辑前请重新读取):{paths}",
        "unavailable": (
            "run_shell 无法运行此命令:本机没有可用的操作系统沙箱({reason}),且配置不允许"
            "在沙箱外运行命令。请改用文件工具(read_file、grep_search、list_files、edit_file),"
            "或请用户启用沙箱,或在 run_shell 设置中设置 allow_unsandboxed。"
        ),
        "unsandboxed": "(本机没有操作系统沙箱:{reason}。因配置允许,命令在沙箱外运行。)",
        "start_failed": "无法启动命令:{error}。",
        "too_long": (
            "command 超过 {limit:,} 字节,一条 shell 命令行不应这么长。请用 write_file 把脚本写入"
            "文件再运行,例如 `bash script.sh`。"
        ),
        "cwd_gone": (
            "工作目录 {cwd} 已不存在,命令无法在那里运行。请重新创建它,或请用户在一个存在的"
            "文件夹中重新开始会话。"
        ),
        "bg_started": (
            "已启动后台任务 {id}(pid {pid}):{command}\n它将在 {secs:g} 秒后被终止。"
            '用 shell_output(job_id="{id}") 查看输出和状态;用 '
            'shell_output(job_id="{id}", stop=true) 终止它。'
        ),
        "bg_exited": "后台任务 {id}({command})在 {secs:.1f} 秒后退出,退出码 {code}。",
        "bg_timeout": "后台任务 {id}({command})达到 {limit:g} 秒的时间限制,已被终止。",
        "bg_stopped": "后台任务 {id}({command})已被终止。",
        "job_unknown": "本会话中没有后台任务 {id!r}。{known}",
        "jobs_known": "已有的任务:{ids}。",
        "jobs_none": "本会话还没有启动过后台任务。",
        "status_running": "任务 {id} 仍在运行(已运行 {secs:.1f} 秒)。",
        "status_exited": "任务 {id} 在 {secs:.1f} 秒后退出,退出码 {code}。",
        "status_timeout": "任务 {id} 达到 {limit:g} 秒的时间限制,已被终止。",
        "status_stopped": "任务 {id} 已被终止。",
        "new_output": "新的输出:",
        "no_new_output": "(没有新的输出)",
        "skipped": "[... 跳过了 {bytes:,} 字节较早的新输出;完整日志:{path}]",
        "summary_ok": "已运行 {command}(退出码 0,{secs:.1f} 秒)",
        "summary_failed": "{command} 以 {code} 退出({secs:.1f} 秒)",
        "summary_timeout": "{command} 在 {secs:g} 秒后超时",
        "summary_bg": "已启动 {id}:{command}",
    },
}


def short_command(command: str, limit: int = 80) -> str:
    """The command on one line, in backticks, cut to `limit` characters."""
    line = " ".join(command.split())
    return f"`{line}`" if len(line) <= limit else f"`{line[: limit - 1]}…`"

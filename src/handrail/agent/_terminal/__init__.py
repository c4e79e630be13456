"""The interactive terminal agent (`handrail chat`): rich output inline, prompt_toolkit input.

Only this package imports rich's live display and prompt_toolkit; the loop below it renders
nothing and every other front end reads the same events.
"""

"""The report page's jinja2 template: one static file, inline CSS, figures as PNGs beside it.

Kept as a string (not a data file) so an installed package always has it.
"""

HTML_TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>cuda-agent benchmark report</title>
<style>
  body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2rem auto;
         max-width: 1250px; padding: 0 1rem; color: #1d2330; background: #fdfdfd; }
  h1 { border-bottom: 3px solid #3b7dd8; padding-bottom: .3rem; }
  h2 { margin-top: 2.2rem; color: #24406e; }
  table { border-collapse: collapse; margin: .6rem 0 1.2rem; font-size: .86rem; }
  th, td { border: 1px solid #c9d2e0; padding: .3rem .55rem; text-align: right; }
  th { background: #e8eef8; }
  td:first-child, th:first-child { text-align: left; }
  tr.paper td { background: #fff7e0; font-style: italic; }
  .note { font-size: .85rem; color: #4a5568; max-width: 60rem; }
  .figures img { max-width: 49%; border: 1px solid #dde3ee; margin: .2rem; }
  #tasks tr.ok td:nth-child(3) { color: #137333; font-weight: 600; }
  #tasks tr.fail td:nth-child(3) { color: #b3261e; font-weight: 600; }
  details { border: 1px solid #dde3ee; border-radius: 4px; margin: .35rem 0; padding: .3rem .6rem; }
  summary { cursor: pointer; }
  pre { background: #f3f5f9; padding: .6rem; overflow-x: auto; font-size: .78rem;
        white-space: pre-wrap; word-break: break-word; }
  .file { font-weight: 600; margin-top: .6rem; }
</style>
</head>
<body>
<h1>Benchmark report</h1>
{% for line in summary %}<p>{{ line }}</p>{% endfor %}

{% for table in level_tables %}
<h2>{{ table.title }}</h2>
<table class="metrics">
  <tr>{% for h in table.header %}<th>{{ h }}</th>{% endfor %}</tr>
  {% for row in table.rows %}
  <tr class="{{ 'ours' if loop.first else 'paper' }}">
    {% for c in row %}<td>{{ c }}</td>{% endfor %}
  </tr>
  {% endfor %}
</table>
{% endfor %}
<p class="note">Italic rows: published numbers. {{ paper.SOURCE }}.</p>
{% for note in paper.NOTES %}<p class="note">{{ note }}</p>{% endfor %}
<p class="note">Rates count every task of the group in the denominator. &ldquo;Correct only&rdquo;
geometric means are over correct, timed solutions; &ldquo;all&rdquo; counts a failed task as 1.0x.
Overall weights each level by its task count.</p>

<h2>Figures</h2>
<div class="figures">{% for f in figures %}<img src="{{ f }}" alt="{{ f }}">{% endfor %}</div>

{% for table in tables %}
<h2>{{ table.title }}</h2>
<table{% if table.anchor %} id="{{ table.anchor }}"{% endif %} class="metrics">
  <tr>{% for h in table.header %}<th>{{ h }}</th>{% endfor %}</tr>
  {% for row in table.rows %}<tr>{% for c in row %}<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}
</table>
{% endfor %}
{% if launch_bound %}
<h2>Launch-bound tasks</h2>
<p>{{ launch_bound_note }}</p>
<ul id="launch-bound">{% for r in launch_bound %}<li>{{ r.name }}</li>{% endfor %}</ul>
{% endif %}

<h2>Inputs</h2>
{% if redrawn %}
<p>Scored on re-drawn inputs (a trivial output passes under the task's own inputs):</p>
<ul id="redrawn">
  {% for r in redrawn %}<li>{{ r.name }}: {{ r.verdict.input_distribution }}</li>{% endfor %}
</ul>
{% else %}<p>Every task was scored on its own inputs.</p>{% endif %}
{% if degenerate %}
<p>Degenerate (no input distribution tells the reference from a trivial output):</p>
<ul id="degenerate">{% for r in degenerate %}<li>{{ r.name }}</li>{% endfor %}</ul>
{% endif %}

<h2>Tasks</h2>
<table id="tasks" class="metrics">
  <tr>{% for h in task_header %}<th>{{ h }}</th>{% endfor %}</tr>
  {% for t in tasks %}
  <tr class="{{ 'ok' if t.status == 'ok' else 'fail' }}">
    {% for c in t.cells %}<td>{{ c }}</td>{% endfor %}
  </tr>
  {% endfor %}
</table>

{% for t in tasks %}
<details class="task" id="task-{{ t.name }}">
  <summary><b>{{ t.name }}</b> &mdash; {{ t.status }}, reward {{ t.verdict.reward }}</summary>
  <pre>{{ t.verdict.summary() }}</pre>
  {% for path, text in t.files.items() %}
  <div class="file">{{ path }}</div><pre>{{ text }}</pre>
  {% else %}<p>No solution files.</p>{% endfor %}
  {% if t.trajectory %}
  <details class="trajectory">
    <summary>trajectory ({{ t.trajectory|length }} records, {{ t.trajectory_path }})</summary>
    {% for step in t.trajectory %}<pre>{{ step }}</pre>{% endfor %}
  </details>
  {% endif %}
</details>
{% endfor %}
</body>
</html>
"""

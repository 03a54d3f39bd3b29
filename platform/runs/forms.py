"""The run form: its fields are generated from ``umbra.config.RunConfig`` so that
the form, the API and the job share one schema; all checks are the schema's. The fields
are drawn in sections (``runs.form_sections``); a pasted or uploaded YAML config
(``runs.config_yaml``) fills the same fields before they are validated."""
from __future__ import annotations

import hashlib
import tempfile
import typing
from pathlib import Path

from django import forms
from django.conf import settings
from pydantic import ValidationError

from runs.config_check import check_config, uploads_dir
from runs.config_yaml import MAX_YAML_BYTES, ConfigYamlError, parse_config_yaml
from runs.form_sections import COLLAPSED, group_fields
from runs.validators import printable_name
from umbra.config import RunConfig
from umbra.data.files import load_file
from umbra.data.gsm8k import DatasetError
from umbra.models.registry import resolve_model

# Problems per uploaded data set: GSM8K's training split has 7,473; the job holds them all in memory.
MAX_DATASET_ROWS = 100_000


# Labels in the field's own terms where "name with spaces" reads wrong (acronyms, units);
# the schema (umbra.config) keeps its names, the form says them in sentence case.
LABELS = {
    "kl_coef": "KL coef", "kv_cache_gib": "KV cache (GiB)", "reward_timeout_s": "Reward timeout (s)",
    "seer_context_aware": "Seer context-aware",
}
# Help for schema fields without a description: what a veRL user expects each to mean.
HELP = {
    "temperature": "sampling temperature of the rollout (1.0 = the policy as is)",
    "iterations": "training iterations (rollout + GRPO step each)",
    "learning_rate": "AdamW learning rate of the policy (veRL's actor.optim.lr)",
    "seed": "random seed: data order, validation hold-out and rollout sampling",
}


def field_label(name: str) -> str:
    """The form's label of RunConfig field ``name`` (sentence case, no colon)."""
    return LABELS.get(name) or name.replace("_", " ").capitalize()


def _field_for(name: str, info) -> forms.Field:
    """A permissive Django field for one schema field (the schema does the validation)."""
    default = info.default
    common = {"required": False, "initial": default, "help_text": info.description or HELP.get(name, ""),
              "label": field_label(name)}
    if info.annotation is bool:
        return forms.BooleanField(**common)
    if typing.get_origin(info.annotation) is typing.Literal:
        choices = [(c, c) for c in typing.get_args(info.annotation)]
        return forms.ChoiceField(choices=choices, **common)
    # Numbers come in as text so that "abc" reaches the schema and gets its message.
    return forms.CharField(max_length=500, **common)


def default_model() -> str:
    """The form's initial model: ``tiny`` when it is the only named model prepared here
    (a ``make demo MODEL=tiny`` installation), else the schema's default."""
    default = RunConfig.model_fields["model"].default
    prepared = {name: (resolve_model(name) / "config.json").is_file() for name in ("tiny", default)}
    return "tiny" if prepared["tiny"] and not prepared[default] else default


# Extra runs the A/B launcher can add beside the baseline and seer: (value, label, config changes).
AB_ABLATIONS = (
    ("no-divided", "seer without divided rollout", {"seer_divided": False}),
    ("no-context", "seer without context-aware scheduling", {"seer_context_aware": False}),
    ("spec", "seer with speculative decoding", {"spec_decoding": True}),
)
AB_BASELINE = "verl"


def _is_flag(name: str) -> bool:
    """Whether ``name`` is a true/false RunConfig field (a checkbox)."""
    info = RunConfig.model_fields.get(name)
    return info is not None and info.annotation is bool


def _post_value(value):
    """A YAML value as the form's POST would carry it (booleans: a checked box or none)."""
    if isinstance(value, bool):
        return "on" if value else None
    return "" if value is None else str(value)


def _wrong_types(values: dict) -> str | None:
    """A message for the first YAML value of the wrong type (RunConfig, strict), or None."""
    try:
        RunConfig.model_validate(values, strict=True)
    except ValidationError as exc:
        for err in exc.errors():
            if err["loc"] and err["type"].endswith("_type"):
                return f"field {err['loc'][0]} in YAML: {err['msg'].lower()}, not {str(err['input'])[:40]!r}"
    return None


class RunForm(forms.Form):
    """Experiment name, optional dataset upload, every RunConfig field, and a YAML config
    that fills those fields (pasted or uploaded)."""

    experiment = forms.CharField(max_length=200, initial="demo", validators=[printable_name],
                                 help_text="runs of one experiment are compared with each other")
    dataset_file = forms.FileField(required=False, help_text=(
        "JSONL or Parquet, in veRL's, TRL's or GSM8K's row shape; overrides 'dataset'"))
    config_yaml = forms.CharField(required=False, label="Config YAML", widget=forms.Textarea(attrs={"rows": 6}),
                                  help_text="RunConfig fields as 'key: value' lines; they replace the fields below")
    config_file = forms.FileField(required=False, label="Config file",
                                  help_text="a .yaml file of the same form (instead of pasting)")
    ab_ablations = forms.MultipleChoiceField(
        required=False, label="A/B ablations", widget=forms.CheckboxSelectMultiple,
        choices=[(v, label) for v, label, _ in AB_ABLATIONS],
        help_text=f"extra runs beside {AB_BASELINE} and seer, queued after them")

    def __init__(self, data=None, files=None, *args, team_slug: str | None = None, **kwargs):
        self.yaml_error: str | None = None
        self.team_slug = team_slug  # a YAML `team:` key (the CLI's run.yaml) must name it
        if data is not None:
            data = self._with_yaml(data, files)
        super().__init__(data, files, *args, **kwargs)
        for name, info in RunConfig.model_fields.items():
            self.fields[name] = _field_for(name, info)
        self.fields["model"].initial = default_model()
        for name, field in self.fields.items():  # help beside the field, read out with it
            if field.help_text:
                field.widget.attrs.setdefault("aria-describedby", f"id_{name}_helptext")

    def _with_yaml(self, data, files):
        """``data`` with the YAML config's fields put in (nothing changes when there is none
        or it cannot be read: then :attr:`yaml_error` says why)."""
        upload = files.get("config_file") if files else None
        text = upload.read(MAX_YAML_BYTES + 1) if upload else data.get("config_yaml", "")  # the limit says the rest
        if not text or (isinstance(text, str) and not text.strip()):
            return data
        try:
            values = parse_config_yaml(text, set(RunConfig.model_fields) | {"experiment", "team"})
        except ConfigYamlError as exc:
            self.yaml_error = str(exc)
            return data
        team = values.pop("team", None)
        if team is not None and str(team) != self.team_slug:
            self.yaml_error = (f"the YAML names team {str(team)[:60]!r} but this form submits to team "
                               f"{self.team_slug!r}: remove the line or open that team's form")
            return data
        # A checkbox reads any text but "false" as checked: `spec_decoding: 0` or `'no'` would turn it on,
        # where the API and the CLI refuse a value that is not true/false.
        flags = [k for k, v in values.items() if _is_flag(k) and not isinstance(v, bool) and v is not None]
        if flags:
            self.yaml_error = f"field {flags[0]} in YAML must be true or false, not {str(values[flags[0]])[:40]!r}"
            return data
        # A quoted number (`iterations: '3'`) or binary is refused, as the API and the CLI's strict check do
        # (the form's own fields would read its text); ranges are left to the fields' own messages.
        wrong = _wrong_types({k: v for k, v in values.items() if k != "experiment"})
        if wrong:
            self.yaml_error = wrong
            return data
        data = data.copy()
        for key, value in values.items():
            posted = _post_value(value)
            if posted is None:
                data.pop(key, None)
            else:
                data[key] = posted
        data["config_yaml"] = ""  # loaded: the fields now hold it
        return data

    def sections(self) -> list[dict]:
        """The fields to draw, by section: ``[{"title", "fields": [BoundField], "collapsed", "errors"}]``
        (a collapsed section with an error opens)."""
        names = [n for n in self.fields if n not in ("config_yaml", "config_file", "ab_ablations", "dataset_file")]
        names.insert(names.index("dataset") + 1 if "dataset" in names else len(names), "dataset_file")
        out = []
        for title, fields in group_fields(names):
            bound = [self[n] for n in fields]
            has_errors = any(b.errors for b in bound)
            out.append({"title": title, "fields": bound, "collapsed": title in COLLAPSED and not has_errors,
                        "slug": title.lower().replace(" ", "-")})
        return out

    def error_fields(self) -> list[tuple[str, str]]:
        """``[(field id, label)]`` of the fields with errors, in the order drawn: the summary
        over the form links to them (a long form's error is otherwise off screen)."""
        order = ["config_yaml", "config_file"] + [f.name for s in self.sections() for f in s["fields"]] + ["ab_ablations"]
        return [(self[n].auto_id, str(self[n].label)[:1].upper() + str(self[n].label)[1:])
                for n in order if n in self.errors]

    def clean_dataset_file(self):
        upload = self.cleaned_data.get("dataset_file")
        if not upload:
            return None
        if upload.size > settings.DATASET_UPLOAD_MAX_BYTES:
            raise forms.ValidationError(f"file is {upload.size:,} bytes; at most {settings.DATASET_UPLOAD_MAX_BYTES:,}")
        raw = upload.read()
        self.dataset_suffix = ".parquet" if upload.name.lower().endswith((".parquet", ".pq")) else ".jsonl"
        if self.dataset_suffix == ".jsonl":
            try:
                lines = raw.decode("utf-8").splitlines()
            except UnicodeDecodeError:
                raise forms.ValidationError("file is not UTF-8 text") from None
            rows = sum(1 for line in lines if line.strip())
            if rows > MAX_DATASET_ROWS:  # before datasets reads them all
                raise forms.ValidationError(f"file has {rows} problems; at most {MAX_DATASET_ROWS}")
        with tempfile.TemporaryDirectory() as folder:  # read as the job will: umbra.data.files
            path = Path(folder) / f"upload{self.dataset_suffix}"
            path.write_bytes(raw)
            try:
                loaded = load_file(path, max_rows=MAX_DATASET_ROWS)
            except DatasetError as exc:
                raise forms.ValidationError(str(exc).replace(str(path), upload.name[:200])) from None
        if len(loaded.problems) > MAX_DATASET_ROWS:
            raise forms.ValidationError(f"file has {len(loaded.problems)} problems; at most {MAX_DATASET_ROWS}")
        self.dataset_rows = len(loaded.problems)  # clean() checks val_fraction against it
        return raw

    def clean(self):
        data = super().clean()
        if self.yaml_error:
            self.add_error("config_file" if self.files.get("config_file") else "config_yaml", self.yaml_error)
            return data
        raw = data.get("dataset_file")
        values = {k: data[k] for k in RunConfig.model_fields if data.get(k) not in (None, "")}
        for name, info in RunConfig.model_fields.items():
            if info.annotation is bool:  # an unchecked box is absent from POST: it means False
                values[name] = bool(data.get(name))
        if raw:
            values["dataset"] = "arith"  # validate the rest before anything is written to disk
        config, errors = check_config(values, team=self.team_slug)
        if raw and config is not None and config.val_fraction > 0 and getattr(self, "dataset_rows", 2) < 2:
            # RunConfig's own check read the placeholder: the uploaded file is the one held out of
            config, errors = None, {"val_fraction": [f"val_fraction needs at least 2 problems in the data set, "
                                                     f"it has {self.dataset_rows}"]}
        for field, messages in errors.items():
            if field == "dataset" and raw:
                field = "dataset_file"
            for msg in messages:
                self.add_error(field if field in self.fields else None, msg)
        if config is not None and not self.errors:
            stored = _store_dataset(raw, self.team_slug, self.dataset_suffix) if raw else None
            data["config"] = config.model_copy(update={"dataset": str(stored)}) if raw else config
        return data


def _store_dataset(raw: bytes, team: str, suffix: str = ".jsonl") -> Path:
    """Keep an uploaded data set in ``team``'s uploads folder, named by content hash."""
    folder = uploads_dir(team)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(raw).hexdigest()[:16]}{suffix}"
    if not path.exists():
        path.write_bytes(raw)
    return path

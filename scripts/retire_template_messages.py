"""Keep the translations of the project template's messages that earlier template versions used.

`grpo-skill update` renders the project's old template version as the base of its three-way merge, with today's
catalog: a template message that changed since is no longer in i18n/locale/*/grpo_skill.po, so that base came out in
English and every changed line of an untouched Chinese project became a conflict. This script reads every committed
version of the catalog and writes the template messages (``#: templates/...``) that the current catalog lacks into
``grpo_skill_retired.po`` beside it, compiled to .mo; the template renders with it as a fallback
(``i18n.template_translations``). Run it after `pybabel update` drops a template message:

    python scripts/retire_template_messages.py
"""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
LOCALES = ROOT / "i18n" / "locale"


def retired_messages(po: Path) -> dict[str, str]:
    relative = str(po.relative_to(ROOT))
    current = {message.id for message in read_po(po.open("rb")) if message.id}
    revisions = subprocess.run(["git", "log", "--format=%H", "--", relative], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.split()
    retired: dict[str, str] = {}
    for revision in reversed(revisions):  # oldest first: a later translation of the same message wins
        text = subprocess.run(["git", "show", f"{revision}:{relative}"], cwd=ROOT, capture_output=True,
                              check=True).stdout
        for message in read_po(io.BytesIO(text)):
            if (message.id and isinstance(message.id, str) and message.string and not message.fuzzy
                    and message.id not in current
                    and any(path.startswith("templates/") for path, _line in message.locations)):
                retired[message.id] = message.string
    return retired


def main() -> None:
    for po in sorted(LOCALES.glob("*/LC_MESSAGES/grpo_skill.po")):
        locale = po.parent.parent.name
        catalog = Catalog(locale=locale, project="grpo-skill", domain="grpo_skill_retired", fuzzy=False)
        retired = retired_messages(po)
        for message_id in sorted(retired):
            catalog.add(message_id, retired[message_id])
        with open(po.with_name("grpo_skill_retired.po"), "wb") as handle:
            write_po(handle, catalog, width=None)
        with open(po.with_name("grpo_skill_retired.mo"), "wb") as handle:
            write_mo(handle, catalog)
        print(f"{po.with_name('grpo_skill_retired.po').relative_to(ROOT)}: {len(retired)} retired template messages")


if __name__ == "__main__":
    main()

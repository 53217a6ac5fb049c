"""Prompt versions of run directories (contract v3, section 3; docs/prompt-versions.md).

Since prompt v3 a run records the version of the prompt it was asked with (``prompt_version`` in
its manifest: :data:`butterfly.core.prompts.PROMPT_VERSION`). A run made before records only its
prompt's fingerprint (``prompt_sha256``). The fingerprints the v2 code made are listed here, so
such a run is read as v2 exactly when its prompt was v2's, byte for byte. Any other fingerprint
without a recorded version (a prompt older than v2, such as the first few-shot wording) has no
version: it is labelled so, never guessed.
"""

from __future__ import annotations

from typing import Final

from butterfly.core.scores import PromptLabel
from butterfly.runs.records import RunManifest

V2: Final = frozenset({
    "3ae59cc988c96eda4442230eec37b6df72f4ad1acc634584000748271bc4b92d",  # zero-shot/schema, /json
    "7cd1a628ba1709976ec512ff9deae40e71e7803b35299738ed0127ad715a2eef",  # zero-shot/json-first
    "d3bb8650c92824ff5435db8bc40dbffec71443470d1c6bac148886453070d1a1",  # zero-shot/json-last
    "4a765157e16d962c2e867510a76c32c9453ce7ee4f555709a1bee386041157fc",  # few-shot/schema
    "0711e6cae28ed852377fbd4f9c3a38824ee1473ec9cf3c68ec6d8e6bbf75de47",  # few-shot/json
    "8376540ded9277dbabecd5cd9565355438ecfe4c369dae42fccfdee6f5a5bb5f",  # few-shot/json-first
    "e4b3190949c29b37ddc14b44094ba05dd4328339b30466619dc5c9f592b467a9",  # few-shot/json-last
    "0f9aea70ddc5e05522f38436c3959e9daa573268e15a8751bdc0405ce853917b",  # cot/schema
    "58e6274dbc66d53bd684d32fc5b6a1e00f34c426b26378ae411e75d2a9fdc736",  # cot/json
    "dfe73dce290a06822ea914c6deed66ef2e0564a719613f2fdf23444b25946641",  # cot/json-first
    "de3a57e2dcd25c2d037e5daf7854b2078dfd1b1ad851059bb64c1460b1e501a5",  # cot/json-last
    "26700dc01b2b8de0f9b2669e562e0dc79251bedb50929dab6356c871db1ede56",  # sc/schema/zero-shot
    "6cedf203e851496daf6bd083336703218b52d636cdd3fe09f68f5b5646255122",  # sc/schema/cot
    "ed25d08c2dd21248bd39283759ec2184b2fc329f0ded3ab12b5693a12ebe1015",  # sc/schema/adaptive
    "ecceaef973047c654420e51fa1b6f901a34aeca4adb36494713a4b5947303451",  # sc/json/zero-shot
    "08187cc5128d4c076251c716aed0fb1f0bc5a730c670ed5e573904fe28bd1c8e",  # sc/json/cot
    "078bdbc9b3254effad1482c477c791353d6ba96278675484547896bcc0d15ae8",  # sc/json/adaptive
    "1225f7cb9438a1255407849bcac8ebf0dc95ad74f7a76efa1ff9436e3a79be28",  # sc/json-first/zero-shot
    "419244c0c28b6f368b8307c3ffd1096e2690df738333af37e8aaaabb54b5a9ce",  # sc/json-first/cot
    "639d0ee653ae69ea2f0c1e129e6dc102fe3226facf0ff7e87484be61429a2f2c",  # sc/json-first/adaptive
    "83a5f6b091dc7e985ed1e25cca14f703c1b8b096f7ec80f5a8ae52b5e77930bf",  # sc/json-last/zero-shot
    "262a23112451c0210dfe0b084cc7cf22567174a1f3f4741bacf199fd33217655",  # sc/json-last/cot
    "c9e08e016b2a31db494cf299bf4de76ab07e2c53b304127b73f34473f961eafe",  # sc/json-last/adaptive
    "f0f529919a5d3f42ef77601c76e59f892dc49abe442b933d25261e4fe4ba0a63",  # adaptive-cot/schema
    "6cefca16a73dc6244008803e937b2ea0162860222c2069888f1dcc8cbef83db8",  # adaptive-cot/json
    "9b3b80db7450203501b065761ec9abb61b4c928174ebfe110f7212beefb627d4",  # adaptive-cot/json-first
    "e7c9c34b39e3be8c33318c5074ac13ea637eecdc759034ad4139e25a3587f06c",  # adaptive-cot/json-last
    "8b9d93ae5cfa36b294197f413e8fa2bed3da260700825f5316ca0fca89ef402b",  # system message alone
})
"""The fingerprints of prompt v2: ``prompt_sha256`` of every strategy/protocol (sc:
self-consistency with its base; adaptive: adaptive-cot) as the code made them at commit 56f4a5f,
the last before v3; and the hash of the system message alone, which the first runs recorded
(before 0a04975, when their messages were v2's zero-shot ones, byte for byte)."""


def prompt_label(manifest: RunManifest) -> PromptLabel:
    """The prompt version a run was asked with: recorded, or named by its fingerprint (only
    the spec track had prompts before versions were recorded: every other track's runs record
    theirs)."""
    sha, name = manifest.prompt_sha256, manifest.params.track
    if manifest.prompt_version is not None:
        return PromptLabel(version=manifest.prompt_version, recorded=True, sha256=sha,
                           track=name)
    return PromptLabel(version=2 if sha in V2 else None, recorded=False, sha256=sha,
                       track=name)

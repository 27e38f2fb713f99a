"""`share-harness certify`: run the client rules of KIP-932 against one share-consumer driver, print
each rule's result and the verdict, and exit by the verdict (the work is `harness.certify.certificate`).
`share-harness matrix`: the conformance suite and a short chaos set over releases x clients, one page
(the work is `harness.certify.matrix`).
"""

from __future__ import annotations

import argparse

from harness import exitcodes
from harness.errors import HarnessError


def cmd_certify(args: argparse.Namespace) -> int:
    """Exit 0 when CERTIFIED, 1 when NOT CERTIFIED, 3 when INCONCLUSIVE (a rule's set-up did not hold) or
    UNKNOWN (the rules could not be run)."""
    # (deferred: loaded only when this command or fixture runs)
    from harness.certify.certificate import RESULT_WORDS, Certification, certify
    from harness.settings import given, spec_from_values  # (deferred: loaded only when this command or fixture runs)
    values = given(args, "certify")
    seeds = values.pop("seeds", 3)
    cert, out = certify(Certification(spec_from_values(values), seeds=seeds, out_root=args.out, quiet=args.quiet))
    for r in cert["rules"]:
        print(f"{RESULT_WORDS[r['result']]:>32}  {r['rule']}" + (f": {r['evidence'][:160]}" if r["evidence"] else ""))
    print(f"{cert['verdict']}: {cert['driver']} ({cert.get('client', '?')} {cert.get('client_version', '?')}, "
          f"client options: {cert['configuration']}) on "
          f"Kafka {cert['kafka_version']}; certificate {out / 'certificate.md'}; comparison {out.parent / 'index.md'}")
    return {"CERTIFIED": exitcodes.PASS, "NOT CERTIFIED": exitcodes.VIOLATION}.get(cert["verdict"], exitcodes.UNKNOWN)


def cmd_matrix(args: argparse.Namespace) -> int:
    """Exit 0 when no cell failed or is unknown, 1 when one failed, 3 when one is unknown."""
    # (deferred: loaded only when this command or fixture runs)
    from harness.certify.matrix import default_versions, overall, run_matrix

    def names(text: str | None, what: str) -> list[str] | None:
        if text is None:
            return None
        found = [n.strip() for n in text.split(",") if n.strip()]
        if not found:
            raise HarnessError(f"--{what} {text!r} names none: give them comma-separated")
        return found
    versions = names(args.versions, "versions") or default_versions()
    cells, page = run_matrix(versions, names(args.clients, "clients"), args.out, args.seed, args.select,
                             args.workers, args.resume)
    word = overall(cells, selected=args.select is not None)
    print(f"matrix {word}: {len(cells)} cells; page {page}")
    return {"PASS": exitcodes.PASS, "FAIL": exitcodes.VIOLATION}.get(word, exitcodes.UNKNOWN)

# Stage 3: shot draws (once per protocol x task, shared by every model), then every probe of one
# (protocol, model, task) in one job: all regimes and seeds (docs/protocols.md).
# params carry the output-affecting probe settings (the rerun key); threads are an execution knob
# (set them with --set-threads or a profile), never part of a result's identity.


# one small file per (protocol, task): not worth a cluster job
localrules:
    write_shot_indices,


rule write_shot_indices:
    input:
        train="resources/tasks/{task}/{thash}/train.parquet",
        card="resources/tasks/{task}/{thash}/card.json",
    output:
        "resources/shots/{protocol}/{dhash}/{task}/{thash}.json",
    log:
        "logs/write_shot_indices/{protocol}/{dhash}/{thash}/{task}.log",
    conda:
        "../../envs/geneb.yaml"
    params:
        draw=shot_draw_params,
    script:
        "../scripts/write_shot_indices.py"


rule fit_probes:
    # the task's files, embeddings, shot draws and audit, under this config's hashes (RunPlan.layout.probe_inputs)
    input:
        unpack(probe_inputs),
    output:
        scores=results("probes/{protocol}/{model}/{task}.parquet"),
        predictions=results("predictions/{protocol}/{model}/{task}.parquet"),
    log:
        "logs/fit_probes/{protocol}/{model}/{task}.log",
    benchmark:
        "benchmarks/fit_probes/{protocol}/{model}/{task}.tsv"
    conda:
        "../../envs/geneb.yaml"
    threads: 1
    resources:
        mem_mb=probe_mem_mb,
        runtime=probe_runtime,
        probe_slot=1,
    params:
        settings=probe_settings,
        # the model's block count (None without layers: the absolute layer of the registry's view in the rows) and
        # the views probed when views.protocols leaves this protocol with the registry view only
        views=probe_views,
        # a rerun key only (the shim does not read it): a new score-table version reruns every probe job once
        score_schema=SCORE_SCHEMA_VERSION,
    script:
        "../scripts/fit_probes.py"

# Stage 3c, beside the probes: the finetune-lora protocol (docs/protocols.md, "finetune-lora"). One job per
# (model, task) fine-tunes every (regime, seed) cell on the shot draws of the recipe's `shots_from` probe protocol
# and writes a table with the probe tables' columns under results/probes/finetune-lora/, which aggregation reads
# like any probe table. Models without a torch network are skipped at planning (geneb.finetune.plan). A GPU
# job where the model's extraction is one; host memory and time from the model size. Checkpoints after every
# epoch in resources/finetune/scratch/: a killed job resumes there.


rule finetune_lora:
    input:
        unpack(finetune_inputs),
    output:
        scores=results("probes/finetune-lora/{model}/{task}.parquet"),
        predictions=results("predictions/finetune-lora/{model}/{task}.parquet"),
    log:
        "logs/finetune_lora/{model}/{task}.log",
    benchmark:
        "benchmarks/finetune_lora/{model}/{task}.tsv"
    conda:
        "../../envs/geneb.yaml"
    threads: config["execution"]["threads"]
    resources:
        gpu=extraction_gpus,
        gres=extraction_gres,
        slurm_partition=extraction_partition,
        mem_mb=finetune_mem_mb,
        runtime=finetune_runtime,
    params:
        finetune=finetune_params,
        # a rerun key only (the shim does not read it): a new score-table version reruns every job once
        score_schema=SCORE_SCHEMA_VERSION,
    script:
        "../scripts/finetune_lora.py"

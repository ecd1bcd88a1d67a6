# Stage 2: one HDF5 embedding file per (model, task); the GPU stage.
# params carry the output-affecting settings (the rerun key); device, batch size, threads and HDF5 locking
# are execution knobs read from config["execution"], so changing them reruns nothing. One output file per
# (model, settings hash, task): no two jobs ever write the same HDF5 file.
# One model, one load per node: the jobs on a node share one model server that loads the model once
# (geneb.extract.server), and a cluster profile groups a model's jobs into a few sbatch jobs (profiles/slurm,
# `groups:`; docs/hpc.md, "One model load per node").


rule extract_embeddings:
    input:
        train="resources/tasks/{task}/{thash}/train.parquet",
        test="resources/tasks/{task}/{thash}/test.parquet",
        card="resources/tasks/{task}/{thash}/card.json",
        vectors=extraction_inputs,
    output:
        "resources/embeddings/{model}/{xhash}/{task}/{thash}.h5",
    log:
        "logs/extract_embeddings/{model}/{xhash}/{thash}/{task}.log",
    benchmark:
        "benchmarks/extract_embeddings/{model}/{xhash}/{thash}/{task}.tsv"
    priority: extraction_priority
    conda:
        extraction_env
    threads: config["execution"]["threads"]
    # a CPU-only encoder (k-mers) or device cpu is a CPU job: no GPU, and the profile's CPU partition
    resources:
        gpu=extraction_gpus,
        gres=extraction_gres,
        slurm_partition=extraction_partition,
        mem_mb=extraction_mem_mb,
        runtime=extraction_runtime,
        extract_slot=1,
    params:
        settings=extraction_params,
    script:
        "../scripts/extract_embeddings.py"
